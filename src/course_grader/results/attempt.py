"""One graded attempt as data: its key, its tests, its written answers and its feedback cells.

The grading pipeline builds an ``Attempt``; ``results.gradebook`` stores it (one row per attempt, with
its tests, answers and cells) and the pages and CSV files are made from what it stored.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from course_grader.status import AttemptStatus, CellStatus, TestStatus


def attempt_key(student: str, exercise: str, submission_sha: str, source_sha: str, grader_version: str) -> str:
    """The attempt's id: the same student, exercise, submission, solution and grader give the same key, so
    grading the same thing twice finds it and skips it."""
    fields = [student, exercise, submission_sha, source_sha, grader_version]
    return hashlib.sha256("|".join(fields).encode()).hexdigest()


@dataclass
class TestResult:
    __test__ = False  # not a pytest class
    test_id: str
    hidden: bool
    points: float
    status: TestStatus
    message: str = ""        # always "" for a hidden test

    @property
    def earned(self) -> float:
        return self.points if self.status is TestStatus.PASSED else 0.0


@dataclass
class AnswerItem:
    cell_id: str
    question: str
    answer: str
    rubric: str
    points_possible: float


@dataclass
class CellRecord:
    label: str
    status: CellStatus
    output: str = ""
    error: str = ""


@dataclass
class Attempt:
    key: str
    student: str
    exercise: str            # "ex01" (or the unrecognised name's text, for a rejection)
    exercise_name: str       # "ex01_capture_boundary" (or "" when no exercise matched)
    title: str
    path: str                # relative to the submissions folder
    submission_sha: str
    source_sha: str
    status: AttemptStatus
    reason: str = ""
    auto_possible: float = 0.0
    manual_possible: float = 0.0
    tests: list[TestResult] = field(default_factory=list)
    answers: list[AnswerItem] = field(default_factory=list)
    cells: list[CellRecord] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def auto_score(self) -> float:
        return sum(t.earned for t in self.tests)
