"""The grader's tests (tests/course_grader/**): the shared fixtures of ``grading_fixtures``.

The folders under this one mirror ``src/course_grader``'s: a test sits in the folder of the module it
tests. The end-to-end suites, which run the whole grader, sit apart in tests/e2e/.
"""

from __future__ import annotations

import sys
from pathlib import Path

# tests/ holds helpers the whole suite shares (grading_fixtures; ordinary_user: a created non-root user)
TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

from grading_fixtures import (  # noqa: E402, F401  (fixtures are found by name in a conftest)
    exercise,
    exercises,
    fake_host,
    grade_fake,
    hidden_mark,
    notebook_file,
    stub_verdicts_fixture,
    submission,
)
