"""One submission before and after grading: the exercises read, a file loaded and matched, a ``Job``, its ``Outcome``.

The static steps every command shares (``course grade``, ``course check``/``submit``, the hub's
hand-in check through ``api``): :func:`read_exercises`, :func:`load_submission` (``load.read_submission``,
where even an unexpected failure is a rejection) and :func:`match_cells` (``intake.cells.check``, where
a notebook whose cells cannot be matched is a rejection). No student code runs here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from course_grader.errors import ExerciseFormatError, GraderError, UsageError
from course_grader.exercise.model import Exercise, load_exercises
from course_grader.intake.cells import Checked, check
from course_grader.intake.discover import Candidate
from course_grader.intake.load import MAX_FILE_BYTES, Loaded, read_submission
from course_grader.results.attempt import Attempt, attempt_key
from course_grader.status import AttemptStatus


def read_exercises(solutions: Path, error: type[Exception] = GraderError) -> dict[str, Exercise]:
    """Every exercise of ``solutions``; ``error`` (a grader fault for ``course grade``, a usage error
    for the students' commands) when they cannot be read or there is none."""
    from course_grader.exercise import release_record

    try:
        exercises = load_exercises(solutions)
    except (OSError, ExerciseFormatError) as exc:
        raise error(f"cannot read the exercises' sources in {solutions}: {exc}") from exc
    if not exercises:
        raise error(f"no exNN_*.ipynb in {solutions}")
    # every cell version released so far: a copy from an earlier release is not a tampered one
    return release_record.with_history(exercises, release_record.record_dir_for(solutions))


def exercise_id(exercises: dict[str, Exercise], name: str) -> str:
    """The id (``ex02``) of the exercise called ``name``: its id, or its full name (``ex02_diagnose``,
    as in file names, with or without ``.ipynb``). Raises ``UsageError`` naming the known ones."""
    wanted = name.strip().removesuffix(".ipynb")
    for ex in exercises.values():
        if wanted in (ex.id, ex.name):
            return ex.id
    known = ", ".join(f"{ex.id} ({ex.name})" for ex in exercises.values())
    raise UsageError(f"no exercise {name!r}; give its id or its name, one of: {known}")


@dataclass
class Job:
    """One loaded submission to grade against one exercise, under its attempt key."""

    cand: Candidate
    loaded: Loaded
    ex: Exercise
    key: str
    ignored: list[str]


@dataclass
class Timing:
    path: str
    seconds: float          # wall time of the whole submission (feedback run + verdicts)
    student_cpu_s: float    # CPU time the feedback kernel reported for the student's own cells
    verdict_s: float


@dataclass
class Outcome:
    """What grading one submission once gave: its attempt, or ``again`` (a measuring fault in a first
    run: the submission is graded once more, alone, before anything counts; ``attempt`` is then None)."""

    attempt: Attempt | None
    timing: Timing | None = None
    again: bool = False


def load_submission(cand: Candidate, max_bytes: int = MAX_FILE_BYTES) -> Loaded:
    """The load step: ``load.read_submission``, where even an unexpected failure is a rejection with
    a reason, never a stopped batch. ``course check``/``submit`` call it too."""
    try:
        return read_submission(cand, max_bytes)
    except Exception as exc:  # noqa: BLE001 - a bad file is a rejection, never a stopped batch
        return Loaded(cand, reason=f"cannot be read ({type(exc).__name__})")


def match_cells(ex: Exercise, notebook: dict) -> Checked:
    """The integrity step: ``intake.cells.check``, where a notebook whose cells cannot even be matched
    is a rejection (``Checked.reject``), never a stopped batch. ``course check``/``submit`` call it too."""
    try:
        return check(ex, notebook)
    except Exception as exc:  # noqa: BLE001 - a malformed notebook is the file's problem, never a stopped batch
        return Checked(reject=f"the notebook's cells could not be matched to the exercise ({type(exc).__name__})")


def rejected(cand: Candidate, loaded: Loaded, ex: Exercise | None, reason: str, grader: str) -> Attempt:
    """The attempt of a file graded without running anything: unreadable, or for no known exercise
    (``grader``: the grader's key, part of the attempt key)."""
    exercise = cand.exercise or ""
    key = attempt_key(cand.student, exercise or cand.rel, loaded.sha256 or f"unread:{reason}",
                      ex.sha256 if ex else "", grader)
    return Attempt(key, cand.student, exercise or cand.rel, ex.name if ex else "", ex.title if ex else "", cand.rel,
                   loaded.sha256, ex.sha256 if ex else "", AttemptStatus.REJECTED, reason,
                   auto_possible=ex.auto_points if ex else 0.0, manual_possible=ex.manual_points if ex else 0.0,
                   notices=list(loaded.notices))
