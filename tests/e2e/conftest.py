"""The end-to-end suites: the whole grader, run for real (the sandbox, torch, a Dask cluster, a created user).

They sit apart from the unit tests (tests/course_grader/, which mirror the grader's folders) because each
runs many modules at once and takes minutes, not seconds. They share the grader tests' fixtures
(``grading_fixtures``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# tests/ holds helpers the whole suite shares (grading_fixtures; ordinary_user: a created non-root user)
TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

from grading_fixtures import exercise, exercises, submission  # noqa: E402, F401  (found by name in a conftest)
