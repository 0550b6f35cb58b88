"""The instructor's autograder: ``course grade SUBMISSIONS_DIR`` (see docs/grading.md).

One module a step: load (read and validate a file), source (the instructor's
notebook), integrity (match cells by id, report changes), assemble (the cells
to run), scan (static tamper scan), child + run (the sandboxed kernel and its
driver), verdict (points), gradebook (SQLite), feedback (HTML), export (CSV and
the review sheet), grade (the pipeline), cli, samples.
"""

# Part of every attempt's key: bump it when a change to the grader can change a grade.
GRADER_VERSION = "1"
