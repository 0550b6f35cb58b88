"""``course_grader``: the instructor's autograder (``course grade``), version 2.

A different product from ``compile_course`` (what students import). Verdicts are
computed in this trusted process from data; student code runs only in the
sandboxed children of ``course_grader.sandbox``. Architecture and the contracts
between the parts: docs/grader-design.md. Instructor guide: docs/grading.md.
"""

# Part of every attempt's key: bump it when a change to the grader can change a grade.
GRADER_VERSION = "2"
