"""The settings of one grading run (``GradeOptions``), typed, each with its description.

``grade_class(submissions, out, options)`` takes them as one value; ``course grade`` builds it from its
command line, the samples and the benchmarks from their own defaults. A new setting is a field here,
with its ``doc``, and the code that reads it; an option of ``course grade`` that sets it goes in
``ui/grade.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path

from compile_course.paths import SOLUTIONS
from course_grader.intake.load import MAX_FILE_BYTES


def _setting(default, doc: str):
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class GradeOptions:
    """How to grade a folder of submissions (every field has a default)."""

    gradebook: Path | None = _setting(None, "the SQLite gradebook (default: OUT/gradebook.sqlite)")
    solutions: Path = _setting(SOLUTIONS, "the instructor's solution notebooks, with the hidden tests")
    exercise: str | None = _setting(None, "grade only this exercise (its id, ex02, or its name)")
    jobs: int = _setting(1, "submissions graded at once on this machine")
    limits: object = _setting(None, "the sandbox's Limits (default: sandbox.Limits())")
    progress: bool = _setting(True, "show progress bars")
    warm: bool = _setting(True, "grade the model answers first (warm-up), keeping their replies and compile cache")
    max_file_bytes: int = _setting(MAX_FILE_BYTES, "a larger submission file is rejected unread")
    host_factory: Callable | None = _setting(None, "tests only: build the sandbox host (hide, compile_cache, limits)")
    verdict_for: Callable | None = _setting(None, "tests only: (grade, harness) for an exercise")
    title: str | None = _setting(None, "the feedback index's title (default: 'Grades: <folder>')")
    executor: object = _setting(None, "grade on a cluster (pipeline.cluster.DaskExecutor) instead of here")
    unconfined: bool = _setting(False, "grade where runs cannot be confined (students' code runs as the grader)")
    store: Path | None = _setting(None, "where the warm-up is kept between runs (default: cache_store's)")


def describe() -> dict[str, str]:
    """``{setting: description}``, in declaration order."""
    return {f.name: f.metadata["doc"] for f in fields(GradeOptions)}
