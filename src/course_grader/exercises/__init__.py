"""Trusted verdicts, one module an exercise: ``grade(ctx: GradeContext) -> list[TestVerdict]``.

Each module names its measuring harness (``HARNESS``, a module of
``course_grader.harness``) and returns one ``TestVerdict`` per graded cell id of
the solution notebook. References and inputs are computed here, in the
grader's process; only data comes back from the measuring process.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def module_for(exercise_id: str) -> ModuleType | None:
    """``course_grader.exercises.<exercise_id>``, or None for an exercise graded only by hand."""
    try:
        return importlib.import_module(f"{__name__}.{exercise_id}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{exercise_id}":
            return None
        raise
