"""The grader's own exceptions: the ways a grading command ends without a grade.

A student's code never raises these; what it does is data (``FaultKind``, ``TestStatus``). The
sandbox's ``SandboxFault`` (``course_grader.sandbox``) carries a ``FaultKind``; the answers' and
replies' errors (``AnswerError``, ``ReplyError``) fail one test and live beside the code that reads them.
"""


class GraderError(RuntimeError):
    """The grader cannot grade this run at all (unreadable solutions, a model answer that fails)."""


class UsageError(ValueError):
    """The command was asked for something that does not exist or cannot be (an unknown ``--exercise``,
    a path that is no notebook, a bad student id): exit 2, nothing created."""


class GradebookVersionError(GraderError):
    """The gradebook was written by a newer grader (its schema version is higher than this grader's)."""
