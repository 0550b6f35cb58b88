"""``course submit FILE --student ID``: hand a notebook in under the name the grader reads, unless it would reject it.

  course submit FILE --student ID [--out DIR]  write DIR/ID__exNN_slug.ipynb (default DIR: handin/)

Before it writes anything it runs ``course check``'s static steps on the file (:func:`course_grader.ui.check.inspect`:
the grader's own loading, cell matching and answers; no student code runs) and refuses what the grader would
reject; flags and missing answers are warnings. What is handed in is the file's bytes as saved on disk, copied
unchanged and atomically into a folder only the student can read; the source is only read. Exit status: 0 when
handed in (with warnings, if any), 1 when the grader would reject the file, 2 for a usage error (a bad student
id among them).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from compile_course.paths import ROOT, SOLUTIONS
from compile_course.workspace import private_folder
from course_grader.errors import UsageError
from course_grader.intake.discover import STUDENT_ID_RULE, attribute, discover, student_id_problem
from course_grader.intake.load import read_bytes
from course_grader.ui.check import Inspection, find_exercise, inspect, locate, say, student_exercises

HANDIN = ROOT / "handin"


def default_handin() -> Path:
    """``handin/`` in the course folder; beside your workspace when the course folder is not yours to write
    (the workspace is then ``~/torch-compile-course-work``, see ``compile_course.workspace``)."""
    from compile_course.paths import writable
    from compile_course.workspace import workspace_dir

    if writable(HANDIN):
        return HANDIN

    return workspace_dir()[0] / "handin"


def submit_main(argv: list[str] | None = None) -> int:
    """``course submit``."""
    p = argparse.ArgumentParser(allow_abbrev=False, prog="course submit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path, help="your notebook, e.g. work/exercises/ex02_diagnose.ipynb")
    p.add_argument("--student", required=True, help=f"your student id ({STUDENT_ID_RULE})")
    p.add_argument("--out", type=Path, help="hand-in folder (default: handin/ in the course folder, or in your "
                                            "workspace when the course folder is not yours to write)")
    p.add_argument("--solutions", type=Path, default=SOLUTIONS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.out = args.out or default_handin()
    student = args.student
    try:
        if problem := student_id_problem(student):   # states the rule, suggests an ASCII id
            raise UsageError(problem)
        if "__" in student:
            raise UsageError(f"student id {student!r} is not allowed: no '__' (two underscores separate "
                             "the id from the exercise in the hand-in's name)")
        args.file = locate(args.file)
        exercises, _ = student_exercises(args.solutions)
        ex = find_exercise(args.file, exercises)
        if args.out.exists() and not args.out.is_dir():
            raise UsageError(f"{args.out}: not a folder")
    except UsageError as exc:
        print(f"course submit: {exc}", file=sys.stderr)
        return 2
    target = args.out / f"{student}__{ex.name}.ipynb"
    if attribute([target.name])[:2] != (student, ex.id):   # the grader's own reading of the name
        print(f"course submit: the grader would not read {target.name} as {student}'s {ex.id}", file=sys.stderr)
        return 2
    insp = inspect(args.file, ex, student)
    if insp.rejected:
        say(f"course submit: refused: the grader would reject {args.file}: {insp.rejected}")
        return 1
    warnings = [f"FLAG {f.line()} (the attempt scores 0 until an instructor clears it)" for f in insp.checked.flags]
    warnings += [f"{a.asked.cell_id}: {a.status}: {a.detail or a.asked.what()}" for a in insp.missing]
    for w in warnings:
        say(f"warning: {w}")
    if warnings:
        say(f"warning: handing in all the same; run `course check {args.file}` first to see the public tests")
    say_what_is_saved(args.file)
    return _write_handin(args.file, insp, target)


CANNOT_SEE_UNSAVED = ("course submit cannot see changes that are not saved: it hands in the file on disk, and "
                      "an editor keeps unsaved typing to itself")


def say_what_is_saved(path: Path) -> None:
    """What is handed in is what is saved on disk: say when that was, and say plainly that changes not yet
    saved cannot be seen (no Jupyter server of the course holds a live model to compare with:
    :mod:`course_grader.intake.open_notebooks`); name the servers that have the notebook open."""
    from datetime import datetime

    from course_grader.intake.open_notebooks import open_in

    saved = datetime.fromtimestamp(path.stat().st_mtime)
    minutes = max(0, int((datetime.now() - saved).total_seconds() // 60))
    say(f"handing in {path} as saved on disk at {saved:%Y-%m-%d %H:%M} ({minutes} min ago)")
    servers = open_in(path)
    for url in servers:
        say(f"note: this notebook is open in the Jupyter server at {url}. {CANNOT_SEE_UNSAVED} (JupyterLab keeps "
            "them in the browser, and the server has no copy to compare). If its tab shows a dot instead of an x, "
            "or you typed since the last save, save it (Ctrl+S, or File > Save Notebook) and run course submit "
            "again: anything typed since the last save is not handed in")
    if not servers:
        say(f"note: {CANNOT_SEE_UNSAVED}. If this notebook is open anywhere (JupyterLab, Colab, VS Code), save it "
            "there first and run course submit again")


def _write_handin(source: Path, insp: Inspection, target: Path) -> int:
    """Copy the file's bytes, unchanged, to ``target`` (atomically); the source is only read."""
    raw, reason = read_bytes(insp.loaded.candidate)
    if raw is None or hashlib.sha256(raw).hexdigest() != insp.loaded.sha256:
        say(f"course submit: refused: {source} changed while it was being checked ({reason or 'new content'}); "
            "save it and try again")
        return 1
    folder = target.parent
    try:
        private_folder(folder)   # the student's hand-ins are theirs alone: 0700, each file 0600
        probe = tempfile.NamedTemporaryFile(prefix=".handin-", dir=folder)
        probe.close()
    except OSError as exc:
        print(f"course submit: cannot write the hand-in folder {folder} ({exc.strerror or exc}); "
              "give another one with --out DIR", file=sys.stderr)
        return 2
    if os.path.exists(target) and os.path.samefile(os.path.realpath(source), target):
        say(f"{target} is already your hand-in (the file you named); nothing to do")
        return 0
    previous = None
    if os.path.lexists(target):
        if target.is_dir() and not target.is_symlink():
            say(f"course submit: refused: {target} is a folder; remove it and try again")
            return 1
        try:
            previous = target.read_bytes() if not target.is_symlink() else b""
        except OSError:
            previous = b""
    if previous == raw:
        say(f"already handed in, unchanged: {target}")
        return 0
    fd, tmp = tempfile.mkstemp(prefix=".handin-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if previous is not None:
        say(f"replaced your earlier hand-in of {insp.ex.name} (it differed)")
    say(f"handed in: {target}  ({len(raw)} bytes, sha256 {insp.loaded.sha256[:16]})")
    found, _ = discover(folder)
    others = [c.rel for c in found if c.student == insp.loaded.candidate.student and c.exercise == insp.ex.id
              and Path(c.path).name != target.name]
    for rel in others:
        say(f"warning: {folder / rel} is another hand-in of {insp.ex.id} by you: the grader counts the most "
            "recent file and lists the other as a duplicate; delete the one you do not mean")
    return 0
