"""Where each of the course's exercises stands, for the Exercises panel: read, never changed.

For each exercise (the ones ``course check`` knows: :func:`course_grader.ui.check.student_exercises`) it looks at
the student's copy in the workspace with the grader's own static steps (:func:`course_grader.ui.check.inspect`:
no student code runs), at the last ``course check`` of it (:mod:`course_grader.ui.check_record`), at the
hand-ins (on a hub the exchange's list, as ``course handins`` shows it; without one the hand-in folder
``course submit --student ID`` writes to) and, on a hub, at the returned feedback (as ``course feedback`` gets
it). A failing exchange is the listing's ``problem``; the files' states are shown all the same.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime
from pathlib import Path

from course_exchange.client import Exchange, ExchangeError, in_hub_session
from course_grader.errors import UsageError
from course_grader.intake.discover import discover
from course_grader.ui import check_record
from course_grader.ui.check import inspect, student_exercises
from course_grader.ui.check_record import Outcome
from course_grader.ui.submit import default_handin

from .protocol import Exercise, Listing, Mode, Status


def when(iso: str | float) -> str:
    """A time as a person reads it, in this machine's zone (2026-12-08 09:14 UTC)."""
    t = datetime.fromtimestamp(iso) if isinstance(iso, float) else datetime.fromisoformat(iso)
    return t.astimezone().strftime("%Y-%m-%d %H:%M %Z")


def lab_path(path: Path, lab_root: Path) -> str | None:
    """``path`` relative to Lab's root ('/'-separated), or None when Lab cannot open it."""
    try:
        return Path(os.path.realpath(path)).relative_to(Path(os.path.realpath(lab_root))).as_posix()
    except ValueError:
        return None


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def hub_state() -> tuple[str, dict, dict | None, str]:
    """``(course, my hand-ins, my feedback or None, problem)`` from the class's exchange."""
    try:
        ex = Exchange.from_env()
        course = ex.course(None)
        return course, ex.my_handins(course), ex.my_feedback(course), ""
    except ExchangeError as exc:
        return "", {"handins": []}, None, f"the class's exchange could not be asked: {exc}"


def listing(workspace: Path, lab_root: Path, student: str = "") -> Listing:
    """The panel's whole view; ``student`` is the id for the hand-in folder when there is no hub."""
    mode = Mode.HUB if in_hub_session() else Mode.LOCAL
    try:
        exercises, _ = student_exercises()
    except UsageError as exc:
        return Listing(mode=mode, course="", problem=str(exc), exercises=[])
    course, problem, handins, feedback = "", "", [], None
    if mode is Mode.HUB:
        course, mine, feedback, problem = hub_state()
        handins = mine["handins"]
    checks = check_record.read(workspace)
    local = local_handins(student) if mode is Mode.LOCAL and student else {}
    rows = []
    for ex in exercises.values():
        copy = workspace / "exercises" / f"{ex.name}.ipynb"
        rows.append(row(ex, copy, lab_root, checks.get(f"exercises/{ex.name}.ipynb"),
                        [h for h in handins if h["exercise_name"] == ex.name], local.get(ex.id), feedback))
    return Listing(mode=mode, course=course, problem=problem, exercises=rows)


def local_handins(student: str) -> dict[str, Path]:
    """``{exercise id: the hand-in file that counts}`` in the hand-in folder, for ``student``."""
    folder = default_handin()
    if not folder.is_dir():
        return {}
    found, _ = discover(folder)
    mine = sorted((c for c in found if c.ok and c.student == student and c.exercise), key=lambda c: c.mtime_ns)
    return {c.exercise: Path(c.path) for c in mine}   # the most recent one counts, as the grader counts


def row(ex, copy: Path, lab_root: Path, check, hub_handins: list[dict], local_handin: Path | None,
        feedback: dict | None) -> Exercise:
    out = Exercise(name=ex.name, title=ex.title, path=lab_path(copy, lab_root), status=Status.MISSING,
                   lines=[], problem="", feedback=False)
    if not copy.is_file():
        out["lines"].append(f"no copy in your workspace ({copy}): `course workspace` brings it")
        return out
    if out["path"] is None:
        out["lines"].append(f"{copy} is outside the folder Lab shows")
    insp = inspect(copy, ex)
    saved = insp.loaded.sha256 if insp.loaded.ok else _sha256(copy)
    status = Status.NOT_STARTED
    if insp.rejected:
        out["problem"] = f"the grader would reject this file: {insp.rejected}"
    elif any(a.ok for a in insp.answers if a.asked.graded):
        status = Status.STARTED
    if check is not None:
        status = Status.CHECKED
        since = "" if check.sha256 == saved else " (the saved file has changed since)"
        score = (f", public tests {check.earned:g}/{check.possible:g} points"
                 if check.outcome is not Outcome.REJECTED else "")
        out["lines"].append(f"checked {when(check.checked)}: {check.outcome}{score}{since}")
    for h in hub_handins:
        if h["counts"]:
            status = Status.HANDED_IN
            same = "the saved file as it is now" if h["sha256"] == saved else "the saved file has changed since"
            out["lines"].append(f"handed in #{h['id']} at {when(h['received'])}{' (LATE)' if h['late'] else ''}: "
                                f"this copy counts; {same}")
    if hub_handins and not any(h["counts"] for h in hub_handins):
        status = Status.HANDED_IN
        out["lines"].append(f"{len(hub_handins)} hand-in(s), none counts: all came after the deadline")
    elif len(hub_handins) > 1:
        out["lines"].append(f"{len(hub_handins)} hand-ins in all; only the one that counts is graded")
    if local_handin is not None:
        status = Status.HANDED_IN
        same = "the saved file as it is now" if _sha256(local_handin) == saved else "the saved file has changed since"
        out["lines"].append(f"handed in at {when(local_handin.stat().st_mtime)}: {local_handin} counts; {same}")
    if feedback is not None and ex.name in feedback.get("score", {}).get("exercises", {}):
        status = Status.RETURNED
        points = feedback["score"]["exercises"][ex.name]
        out["lines"].append(f"returned {when(feedback['returned'])}: {points:g}/{ex.auto_points + ex.manual_points:g}"
                            " points (Open feedback shows why)")
        out["feedback"] = True
    out["status"] = status
    if status is Status.NOT_STARTED:
        out["lines"].insert(0, "not started: no answer given yet")
    elif status is Status.STARTED:
        out["lines"].insert(0, "answered, not checked yet")
    return out
