"""The exercise source format (docs/exercise-format.md) as constants, shared by
the release command and the grader so the two can never read it differently."""

import re

KINDS = ("locked", "solution", "answer", "test", "hidden-test")
GRADED_KINDS = ("test", "hidden-test")
READ_ONLY_KINDS = ("locked", "test")
BEGIN_CODE, END_CODE = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_MD, END_MD = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
ANSWER_REGION = re.compile(re.escape(BEGIN_MD) + r".*?" + re.escape(END_MD), re.DOTALL)
