"""``course check FILE`` and ``course submit FILE --student ID``: what the grader will say, before hand-in.

  course check FILE                            load, integrity, answers, public tests' verdicts
  course submit FILE --student ID [--out DIR]  write DIR/ID__exNN_slug.ipynb (default DIR: handin/)

Both run the grader's own steps, not copies (``course_grader.pipeline.submission``): ``load_submission`` (the
same limits and rejection reasons), ``match_cells`` (``cells.check``: its flags, notices and rejections),
then :mod:`course_grader.exercise.answers` (every answer present and readable, judged by the verdicts' own
parsers). ``course check`` then grades the file with ``GradingSession.grade_one``
(``course_grader.pipeline.session``: the same verdict code, flag voiding and fault reasons as ``course
grade``, without the feedback run), in the grader's ``GradingHost``, and shows the public tests only: of the
hidden tests it says how many there are and their points. Not root, the host confines what it can and
otherwise runs unconfined (as ``course grade --unconfined``), and one line says which: it is the student's own
code on the student's own machine. Exit status of ``check``: 0 when everything the grader checks in public
passes; 1 when something fails, is missing or the file would be rejected; 2 for a usage error. ``submit``: 0
when handed in (with warnings, if any), 1 when the grader would reject the file, 2 for a usage error (a bad
student id among them).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from compile_course.paths import BUILD, ROOT, SOLUTIONS
from compile_course.workspace import private_folder
from course_grader.errors import UsageError
from course_grader.exercise.answers import AnswerState, answer_states
from course_grader.exercise.model import Exercise
from course_grader.intake.cells import Checked
from course_grader.intake.discover import (
    STUDENT_ID_RULE,
    Candidate,
    attribute,
    discover,
    exercise_of,
    student_id_problem,
)
from course_grader.intake.load import MAX_FILE_BYTES, Loaded, read_bytes
from course_grader.pipeline.submission import load_submission, match_cells, read_exercises
from course_grader.results.shown import printable
from course_grader.status import Confinement

HANDIN = ROOT / "handin"
TICK_S = 10.0


def default_handin() -> Path:
    """``handin/`` in the course folder; beside your workspace when the course folder is not yours to write
    (the workspace is then ``~/torch-compile-course-work``, see ``compile_course.workspace``)."""
    from compile_course.paths import writable
    from compile_course.workspace import workspace_dir

    if writable(HANDIN):
        return HANDIN

    return workspace_dir()[0] / "handin"


def student_exercises(solutions: Path = SOLUTIONS) -> tuple[dict[str, Exercise], str]:
    """``(exercises, note)``: what ``course check`` and ``course submit`` judge a notebook against.

    The instructor's ``solutions`` when this user can read them; otherwise (a student's copy of the
    course, which has none, or a shared checkout whose solutions are closed to students) the released
    exercises and their release record, which hold the public tests and the hidden tests' ids and
    points, never their code. ``note`` says which, for one line of output. Raises ``UsageError``."""
    from compile_course.paths import EXERCISES
    from course_grader.exercise.model import ExerciseFormatError
    from course_grader.exercise.release_record import released_exercises

    solutions = Path(solutions)
    sources = sorted(solutions.glob("ex[0-9][0-9]_*.ipynb")) if os.access(solutions, os.R_OK | os.X_OK) else []
    if sources and all(os.access(p, os.R_OK) for p in sources):
        return read_exercises(solutions, UsageError), ""
    try:
        return released_exercises(EXERCISES), f"as released in {EXERCISES} (hidden tests: ids and points only)"
    except (OSError, ExerciseFormatError) as exc:
        raise UsageError(f"cannot read the course's exercises: {exc}") from exc


@dataclass
class Inspection:
    """The static steps' results for one file (no student code has run)."""

    path: Path
    ex: Exercise
    loaded: Loaded
    checked: Checked | None = None
    answers: list[AnswerState] = field(default_factory=list)

    @property
    def rejected(self) -> str:
        """The grader's reason to reject the file, or ""."""
        return self.loaded.reason or (self.checked.reject if self.checked else "")

    @property
    def missing(self) -> list[AnswerState]:
        """Graded answers that are not answered or cannot be read."""
        return [a for a in self.answers if a.asked.graded and not a.ok]


def in_workspace(path: Path) -> Path | None:
    """Where the guide's path ``work/exercises/exNN_slug.ipynb`` (or a bare ``exNN_slug.ipynb``) is when
    it is not under the current folder: in the student's workspace, wherever that is
    (``~/torch-compile-course-work`` when the course folder is not theirs). None when not there either."""
    from compile_course.workspace import workspace_dir

    if path.is_absolute():
        return None
    workspace = workspace_dir()[0]
    parts = path.parts
    tries = [workspace / Path(*parts[1:])] if parts[0] == "work" and len(parts) > 1 else []
    tries += [workspace / path, workspace / "exercises" / path.name]
    return next((t for t in tries if os.path.lexists(t)), None)


def locate(path: Path) -> Path:
    """``path`` as given when it exists; else the workspace's copy the guide's path means (saying so);
    else a ``UsageError`` that says where the workspace is."""
    if os.path.lexists(path) or not path.name.endswith(".ipynb"):
        return path
    if (found := in_workspace(path)) is not None:
        say(f"({path} is not under {Path.cwd()}; it is your workspace's {found})")
        return found
    from compile_course.workspace import workspace_dir

    workspace, why = workspace_dir()
    raise UsageError(f"{path}: no such file under {Path.cwd()}, nor in your workspace, which is {workspace} "
                     f"({why}; `course workspace` fills it): your copy of this exercise would be "
                     f"{workspace / 'exercises' / path.name}")


def find_exercise(path: Path, exercises: dict[str, Exercise]) -> Exercise:
    """The exercise a notebook file is for, told from its name as the grader tells it."""
    if not path.name.endswith(".ipynb"):
        raise UsageError(f"{path}: not a notebook name (expected exNN_slug.ipynb)")
    if not os.path.lexists(path):
        raise UsageError(f"{path}: no such file")
    if path.is_dir():
        raise UsageError(f"{path}: a folder, not a notebook file")
    eid = exercise_of(path.name.split("__", 1)[1] if "__" in path.name else path.name)
    if eid is None:
        raise UsageError(f"{path.name}: the file name does not start with an exercise id "
                         f"(exNN_...; known: {', '.join(exercises)})")
    if eid not in exercises:
        raise UsageError(f"{path.name}: no exercise {eid} (known: {', '.join(exercises)})")
    return exercises[eid]


def inspect(path: Path, ex: Exercise, student: str = "me", max_bytes: int = MAX_FILE_BYTES) -> Inspection:
    """Load, integrity and answers: the grader's static steps on one file."""
    real = Path(os.path.realpath(path))   # the student's own file may be a link; the hand-in never is
    try:
        st = real.stat()
        when, size = st.st_mtime_ns, st.st_size
    except OSError:
        when, size = 0, 0
    cand = Candidate(path.name, real, student, ex.id, "", when, size)
    insp = Inspection(Path(path), ex, load_submission(cand, max_bytes))
    if insp.loaded.ok:
        insp.checked = match_cells(ex, insp.loaded.notebook)
        if not insp.checked.reject:
            insp.answers = answer_states(ex, insp.checked)
    return insp


def say(line: str = "") -> None:
    """One line for the student, escaped as every grader line is (``shown.printable``): file names and
    messages quoting a notebook's text cannot forge lines of their own."""
    print(printable(line), flush=True)


def report_static(insp: Inspection) -> bool:
    """Print the static steps; True when none of them fails."""
    ex = insp.ex
    if insp.loaded.reason:
        say(f"[1/4] load: REJECTED: {insp.loaded.reason}")
        say("      the grader rejects this file: it scores 0")
        return False
    say(f"[1/4] load: ok ({insp.loaded.candidate.size / 1024:.1f} kB, "
        f"{len(insp.loaded.notebook.get('cells', []))} cells)")
    for notice in insp.loaded.notices:
        say(f"      notice: {notice}")
    if insp.checked.reject:
        say(f"[2/4] locked and test cells: REJECTED: {insp.checked.reject}")
        say(f"      the grader rejects this file as a submission of {ex.name}: it scores 0")
        return False
    flags, notices = insp.checked.flags, insp.checked.notices
    say(f"[2/4] locked and test cells: {'ok' if not flags else f'{len(flags)} FLAG(S)'}")
    for f in flags:
        say(f"      FLAG {f.line()}")
    if flags:
        say("      a flag makes the grader score this attempt 0 until an instructor clears it")
    for f in notices:
        say(f"      notice: {f.line()}")
    graded = [a for a in insp.answers if a.asked.graded]
    say(f"[3/4] answers: {len(graded) - len(insp.missing)}/{len(graded)} present and readable")
    for a in insp.answers:
        label = "ok" if a.ok else a.status.upper() if a.asked.graded else "note"
        say(f"      {label:<13} {a.asked.cell_id}: {a.asked.what()}")
        if a.detail:
            say(f"                    {a.detail}")
        if not a.ok and not a.asked.graded:
            say("                    (no test reads this cell, but it raises an error when the notebook runs)")
    return not flags and not insp.missing


def check_main(argv: list[str] | None = None, **doubles) -> int:
    """``course check``. ``doubles``: ``host_factory``/``verdict_for`` for tests (see :func:`grade_quietly`)."""
    p = argparse.ArgumentParser(allow_abbrev=False, prog="course check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path, help="your notebook, e.g. work/exercises/ex02_diagnose.ipynb")
    p.add_argument("--solutions", type=Path, default=SOLUTIONS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    try:
        args.file = locate(args.file)
        exercises, source = student_exercises(args.solutions)
        ex = find_exercise(args.file, exercises)
    except UsageError as exc:
        print(f"course check: {exc}", file=sys.stderr)
        return 2
    say(f"course check {args.file}: {ex.name} ({ex.title})" + (f", {source}" if source else ""))
    insp = inspect(args.file, ex)
    ok = report_static(insp)
    if insp.rejected:
        say(f"result: the grader would reject this file ({time.perf_counter() - t0:.1f} s)")
        return 1
    public = [t for t in ex.tests if not t.hidden]
    hidden = ex.hidden_points
    if ex.tests:
        ok &= run_public_tests(insp, exercises, args.solutions, **doubles)
    else:
        say("[4/4] public tests: none in this exercise")
    if hidden:
        say(f"hidden tests: {len(hidden)} ({sum(points for _, points in hidden):g} points), not run here: "
            "the grader also runs them when you hand in")
    if ex.answers:
        say(f"reviewed by a person: {len(ex.answers)} written answer(s), {ex.manual_points:g} points")
    took = time.perf_counter() - t0
    if ok:
        say(f"result: everything the grader checks in public passes "
            f"({sum(t.points for t in public):g}/{sum(t.points for t in public):g} public points; {took:.1f} s)")
        return 0
    say(f"result: something above fails or is missing ({took:.1f} s)")
    return 1


class _Ticker:
    """A line every ``TICK_S`` seconds while the sandbox measures, so a long check does not look hung."""

    def __init__(self, what: str):
        self.what, self.stop, self.t0 = what, threading.Event(), time.perf_counter()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(TICK_S):
            say(f"      ... {self.what} ({time.perf_counter() - self.t0:.0f} s)")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def _stored_entry(exercises: dict[str, Exercise]):
    """This machine's stored warm-up of an identical grading run (``cache_store``; root-only, so usually
    only for root), or None: none here, or another user's (then nothing is created)."""
    from course_grader import grader_key
    from course_grader.pipeline import cache_store

    store = cache_store.default_store()
    try:
        if not store.is_dir() or not os.access(store, os.R_OK | os.W_OK | os.X_OK):
            return None
        return cache_store.open_entry({e.id: e.sha256 for e in exercises.values()}, grader_key(), store)[0]
    except OSError:
        return None


def is_root() -> bool:
    return os.geteuid() == 0


def confinement_line(host) -> str:
    """One line saying how the host confines student code when not root ("" as root)."""
    mode = getattr(host, "confinement", None) or (Confinement.ROOT if is_root() else Confinement.NONE)
    if mode == Confinement.ROOT:
        return ""
    if mode == Confinement.USERNS:
        return "not root: your code runs confined in user namespaces (the grader confines it as root)"
    return "not root: your code runs unconfined, as you (like `course grade --unconfined`); the grader confines it"


def grade_quietly(insp: Inspection, exercises: dict[str, Exercise], solutions: Path = SOLUTIONS,
                  host_factory=None, verdict_for=None):
    """The grader's ``GradingSession.grade_one`` on this file, without the feedback run: an ``Attempt``
    (hidden tests' messages already dropped by ``pipeline.verdicts``). ``host_factory(hide, compile_cache,
    limits)`` and ``verdict_for`` exist for tests, as in ``grade_class``; by default the sandbox's
    ``GradingHost`` and the exercise's test cells. Raises ``GraderError``."""
    from course_grader.config import GradeOptions
    from course_grader.pipeline import cache_store
    from course_grader.pipeline.session import GradingSession, instructor_paths
    from course_grader.pipeline.submission import Job

    ex = insp.ex
    with ExitStack() as stack:
        run_dir = Path(tempfile.mkdtemp(prefix="course-check-"))
        stack.callback(shutil.rmtree, run_dir, True)
        try:
            BUILD.mkdir(parents=True, exist_ok=True)   # hidden from the runs only if it exists first
        except OSError:
            pass
        compile_cache = entry = None
        if host_factory is None and verdict_for is None:
            compile_cache = cache_store.new_folder(run_dir)
            entry = _stored_entry(exercises)
        options = GradeOptions(solutions=solutions, progress=False, host_factory=host_factory,
                               verdict_for=verdict_for)
        hide = instructor_paths(solutions, run_dir, *([entry.store] if entry else []))
        session = stack.enter_context(GradingSession.open(hide, options, compile_cache=compile_cache, entry=entry))
        if session.reuse_stored([ex]):   # no warm-up of its own: a check grades no model answer
            say("      (starting from this machine's compile cache of an identical grading run)")
        if line := confinement_line(session.host):
            say(f"      {line}")
        with _Ticker("still measuring"):
            return session.grade_one(Job(insp.loaded.candidate, insp.loaded, ex, "check", []), feedback=False)


def run_public_tests(insp: Inspection, exercises: dict[str, Exercise], solutions: Path = SOLUTIONS,
                     **doubles) -> bool:
    """Print the public tests' verdicts of :func:`grade_quietly`; True when every one passes."""
    from course_grader.errors import GraderError
    from course_grader.status import AttemptStatus, TestStatus

    say("[4/4] public tests: measured by the grader's own verdict code in its sandbox; this can take a minute")
    try:
        attempt = grade_quietly(insp, exercises, solutions, **doubles)
    except GraderError as exc:
        say(f"      GRADER FAULT (not your fault): {exc}")
        return False
    except Exception as exc:  # noqa: BLE001 - the sandbox could not start here: say so, no traceback
        say(f"      the grader's sandbox could not run here: {type(exc).__name__}: {str(exc)[:300]}")
        return False
    if attempt is None or attempt.status is AttemptStatus.FAULT:
        say(f"      GRADER FAULT (not your fault): {attempt.reason if attempt else 'no result'}")
        return False
    if attempt.status is AttemptStatus.REJECTED:
        say(f"      REJECTED: {attempt.reason}")
        return False
    public = [t for t in attempt.tests if not t.hidden]
    for t in public:
        say(f"      {t.status.upper():<7} {t.test_id}  {t.earned:g}/{t.points:g}"
            + ("  (it passed; the flag voids it)" if t.status is TestStatus.VOIDED else ""))
        for line in (t.message or "").splitlines():
            say(f"              {line}")
    if attempt.reason and attempt.status is not AttemptStatus.FLAGGED:
        say(f"      the grader says: {attempt.reason}")
    earned, possible = sum(t.earned for t in public), sum(t.points for t in public)
    say(f"      public tests: {earned:g}/{possible:g} points")
    return all(t.status is TestStatus.PASSED for t in public)


# ---------------------------------------------------------------- hand in


def submit_main(argv: list[str] | None = None) -> int:
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
