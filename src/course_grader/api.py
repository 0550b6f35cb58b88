"""The grader's public interface: what code outside ``course_grader`` may use (the hub exchange among it).

Everything else in the package is the grader's own and may move; these names stay, with these meanings.
A caller never imports another ``course_grader`` module.

* :func:`exercises` — the course's exercises, as ``{id: ExerciseInfo}`` (id, notebook name, points).
* :func:`check_handin` — the grader's static steps on one notebook (load, locked and test cells,
  answers; no student code runs): the exercise it is for, the reason the grader would refuse it (the
  same words ``course submit`` prints), and its warnings. Safe to call on hostile bytes in a service.
* :func:`handin_name` — the file name ``course grade`` reads as one student's hand-in of one exercise.
* :data:`STUDENT_ID_RULE`, :func:`student_id_problem` — what a student id may be, and why one is not.
* :func:`hand_back_folders` — the per-student folders a ``course grade hand-back`` wrote.
* :class:`LmsScores` — a graded results folder's final scores, and the record of those sent to an LMS
  (``course grade post-scores``): :class:`FinalScore` each, withheld ones with the reason, :class:`Post`.
* :func:`console` — a rich console as wide as the terminal, never folded at 80 columns in a log.
* :data:`COLLECT_RECORD` — the name of the record ``course collect`` writes beside the hand-ins (known to
  ``course grade``, which reports every other file it does not grade).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from compile_course.paths import SOLUTIONS
from course_grader.errors import HandinError
from course_grader.intake.discover import COLLECT_RECORD, STUDENT_ID, STUDENT_ID_RULE, attribute, student_id_problem
from course_grader.intake.load import MAX_FILE_BYTES
from course_grader.results.final_scores import FinalScore
from course_grader.results.handback import MARKER
from course_grader.results.posted import Post
from course_grader.ui.terminal import console

__all__ = ["COLLECT_RECORD", "ExerciseInfo", "FinalScore", "HandinCheck", "HandinError", "LmsScores", "Post",
           "STUDENT_ID_RULE", "check_handin", "console", "exercises", "hand_back_folders", "handin_name",
           "student_id_problem"]


@dataclass(frozen=True)
class ExerciseInfo:
    id: str            # "ex02"
    name: str          # "ex02_diagnose": the notebook's stem
    points: float      # the exercise's possible points (automatic and by hand)


@dataclass
class HandinCheck:
    """What the grader's static steps say of one notebook handed in as ``student``'s ``exercise``."""

    exercise: ExerciseInfo
    student: str
    sha256: str = ""
    refused: str = ""                                  # "" when the grader would take it
    warnings: list[str] = field(default_factory=list)  # taken all the same (flags, missing answers)

    @property
    def ok(self) -> bool:
        return not self.refused


def _read(solutions: Path | None):
    from course_grader.pipeline.submission import read_exercises

    return read_exercises(solutions or SOLUTIONS, HandinError)


def exercises(solutions: Path | None = None) -> dict[str, ExerciseInfo]:
    """The course's exercises, by id."""
    return {eid: ExerciseInfo(ex.id, ex.name, float(sum(c.points for c in ex.cells)))
            for eid, ex in _read(solutions).items()}


def handin_name(student: str, exercise_name: str) -> str:
    """``STUDENT__exNN_slug.ipynb``: how ``course grade`` attributes a file to a student and an exercise.
    Raises :class:`HandinError` when the id is not one the grader accepts."""
    if problem := student_id_problem(student):
        raise HandinError(problem)
    if "__" in student:
        raise HandinError(f"student id {student!r} is not allowed: no '__'")
    name = f"{student}__{exercise_name}.ipynb"
    if attribute([name])[0] != student:
        raise HandinError(f"the grader would not read {name} as {student}'s hand-in")
    return name


def check_handin(notebook: Path | bytes, student: str, file_name: str, *,
                 solutions: Path | None = None, max_bytes: int = MAX_FILE_BYTES) -> HandinCheck:
    """The grader's static steps on ``notebook`` (a path, or the bytes of an upload), which the student
    names ``file_name`` (``exNN_slug.ipynb``; a path part is ignored). Raises :class:`HandinError` for a
    name that is no exercise of the course or a bad student id; every problem with the file's content is
    ``refused`` instead, in the words ``course submit`` uses."""
    from course_grader.ui.check import inspect

    known = _read(solutions)
    handin_name(student, "ex00")            # the id's own rules, before anything is read
    base = os.path.basename(file_name.replace("\\", "/"))
    ex = _exercise(base, known)
    if isinstance(notebook, bytes | bytearray) and len(notebook) > max_bytes:
        return HandinCheck(ex, student, refused=f"the file is {len(notebook)} bytes; the grader reads at most "
                                                f"{max_bytes} bytes")
    with tempfile.TemporaryDirectory(prefix="course-handin-") as tmp:
        path = Path(notebook) if isinstance(notebook, str | Path) else Path(tmp) / base
        if not isinstance(notebook, str | Path):
            path.write_bytes(bytes(notebook))
        insp = inspect(path, known[ex.id], student, max_bytes)
        check = HandinCheck(ex, student, sha256=insp.loaded.sha256, refused=insp.rejected)
        if not check.refused:
            check.warnings = [f"FLAG {f.line()} (the attempt scores 0 until an instructor clears it)"
                              for f in insp.checked.flags]
            check.warnings += [f"{a.asked.cell_id}: {a.status}: {a.detail or a.asked.what()}" for a in insp.missing]
        return check


def _exercise(name: str, known) -> ExerciseInfo:
    """The exercise a file name is for, told as the grader tells it (``exNN_...ipynb``)."""
    from course_grader.intake.discover import exercise_of

    if not name.endswith(".ipynb"):
        raise HandinError(f"{name or '(no name)'}: not a notebook name (expected exNN_slug.ipynb)")
    eid = exercise_of(name.split("__", 1)[1] if "__" in name else name)
    if eid is None:
        raise HandinError(f"{name}: the file name does not start with an exercise id "
                          f"(exNN_...; known: {', '.join(known)})")
    if eid not in known:
        raise HandinError(f"{name}: no exercise {eid} (known: {', '.join(known)})")
    ex = known[eid]
    return ExerciseInfo(ex.id, ex.name, float(sum(c.points for c in ex.cells)))


def hand_back_folders(to: Path) -> dict[str, Path]:
    """``{student: folder}`` of a hand-back folder written by ``course grade hand-back OUT --to DIR``
    (each folder holds ``index.html`` and one page an exercise). Raises :class:`HandinError` when ``to``
    is not one."""
    to = Path(to)
    if not (to / MARKER).is_file():
        raise HandinError(f"{to}: not a hand-back folder (written by course grade hand-back; no {MARKER})")
    return {p.name: p for p in sorted(to.iterdir())
            if p.is_dir() and not p.is_symlink() and STUDENT_ID.fullmatch(p.name)}


class LmsScores:
    """The results folder ``out`` of ``course grade run`` (its gradebook, or ``gradebook``), as a poster of scores
    to an LMS sees it: the final scores, the files that named no student, and the record of posts.
    Raises :class:`HandinError` when there is no gradebook there (none is created)."""

    def __init__(self, out: Path, gradebook: Path | None = None):
        from course_grader.results.gradebook import Gradebook

        self.out = Path(out)
        path = Path(gradebook) if gradebook else self.out / "gradebook.sqlite"
        if not path.is_file():
            raise HandinError(f"no gradebook at {path}: give the results folder of course grade run (OUT)")
        self.path = path
        self.book = Gradebook(path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.book.close()
        return False

    def scores(self) -> list[FinalScore]:
        from course_grader.results.final_scores import final_scores

        return final_scores(self.book)

    def unattributed(self) -> list[str]:
        """The files of the graded folder that named no student (never graded, never posted)."""
        path = self.out / "unattributed.txt"
        return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []

    def posts(self) -> dict[tuple[str, str], Post]:
        from course_grader.results.posted import latest

        return latest(self.book)

    def record(self, post: Post) -> Post:
        from course_grader.results.posted import record

        return record(self.book, post)
