"""``course check FILE``: what the grader will say of a notebook, before hand-in.

  course check FILE     load, integrity, answers, public tests' verdicts

It runs the grader's own steps, not copies (``course_grader.pipeline.submission``): ``load_submission`` (the
same limits and rejection reasons), ``match_cells`` (``cells.check``: its flags, notices and rejections),
then :mod:`course_grader.exercise.answers` (every answer present and readable, judged by the verdicts' own
parsers): :func:`inspect`, which ``course submit`` (:mod:`course_grader.ui.submit`) runs too. It then grades
the file with ``GradingSession.grade_one`` (``course_grader.pipeline.session``: the same verdict code, flag
voiding and fault reasons as ``course grade``, without the feedback run), in the grader's ``GradingHost``,
and shows the public tests only: of the hidden tests it says how many there are and their points. Not root,
the host confines what it can and otherwise runs unconfined (as ``course grade run --unconfined``), and one line
says which: it is the student's own code on the student's own machine. Exit status: 0 when everything the
grader checks in public passes; 1 when something fails, is missing or the file would be rejected; 2 for a
usage error.
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

from compile_course.paths import BUILD, SOLUTIONS
from course_grader.errors import UsageError
from course_grader.exercise.answers import AnswerState, answer_states
from course_grader.exercise.model import Exercise
from course_grader.intake.cells import Checked
from course_grader.intake.discover import Candidate, exercise_of
from course_grader.intake.load import MAX_FILE_BYTES, Loaded
from course_grader.pipeline.submission import load_submission, match_cells, read_exercises
from course_grader.results.shown import printable
from course_grader.status import Confinement
from course_grader.ui import check_record
from course_grader.ui.check_record import Outcome

TICK_S = 10.0


def student_exercises(solutions: Path = SOLUTIONS) -> tuple[dict[str, Exercise], str]:
    """``(exercises, note)``: what ``course check`` and ``course submit`` judge a notebook against.

    The instructor's ``solutions`` when this user can read them; otherwise (a student's copy of the
    course, which has none, or a shared checkout whose solutions are closed to students) the released
    exercises and their release record, which hold the public tests and the hidden tests' ids and
    points, never their code. ``note`` says which, for one line of output. Raises ``UsageError``."""
    from compile_course.paths import EXERCISES
    from course_grader.errors import ExerciseFormatError
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
    public = [t for t in ex.tests if not t.hidden]
    possible = sum(t.points for t in public)
    if insp.rejected:
        say(f"result: the grader would reject this file ({time.perf_counter() - t0:.1f} s)")
        keep_record(insp, Outcome.REJECTED, 0.0, possible)
        return 1
    hidden = ex.hidden_points
    earned = possible
    if ex.tests:
        score = run_public_tests(insp, exercises, args.solutions, **doubles)
        ok &= score.passed
        earned = score.earned
    else:
        say("[4/4] public tests: none in this exercise")
    if hidden:
        say(f"hidden tests: {len(hidden)} ({sum(points for _, points in hidden):g} points), not run here: "
            "the grader also runs them when you hand in")
    if ex.answers:
        say(f"reviewed by a person: {len(ex.answers)} written answer(s), {ex.manual_points:g} points")
    took = time.perf_counter() - t0
    keep_record(insp, Outcome.PASSES if ok else Outcome.FAILS, earned, possible)
    if ok:
        say(f"result: everything the grader checks in public passes "
            f"({earned:g}/{possible:g} public points; {took:.1f} s)")
        return 0
    say(f"result: something above fails or is missing ({took:.1f} s)")
    return 1


def keep_record(insp: Inspection, outcome: Outcome, earned: float, possible: float) -> None:
    """The check's outcome in the workspace's check record (:mod:`.check_record`), which Lab's Exercises panel
    shows; a file outside the workspace is not recorded, and a record that cannot be written is one note."""
    sha256 = insp.loaded.sha256
    if not sha256:   # rejected before it was read whole: the bytes on disk, so a later save shows as a change
        try:
            sha256 = hashlib.sha256(Path(insp.path).read_bytes()).hexdigest()
        except OSError:
            sha256 = ""
    try:
        check_record.record(insp.path, sha256, outcome, earned, possible)
    except OSError as exc:
        say(f"note: this check is not recorded for the Exercises panel ({exc.strerror or exc})")


@dataclass(frozen=True)
class PublicScore:
    passed: bool       # every public test passed
    earned: float
    possible: float


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
    return "not root: your code runs unconfined, as you (like `course grade run --unconfined`); the grader confines it"


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
                     **doubles) -> PublicScore:
    """Print the public tests' verdicts of :func:`grade_quietly`; their score (none earned when the run fails)."""
    from course_grader.errors import GraderError
    from course_grader.status import AttemptStatus, TestStatus

    possible = sum(t.points for t in insp.ex.tests if not t.hidden)
    say("[4/4] public tests: measured by the grader's own verdict code in its sandbox; this can take a minute")
    try:
        attempt = grade_quietly(insp, exercises, solutions, **doubles)
    except GraderError as exc:
        say(f"      GRADER FAULT (not your fault): {exc}")
        return PublicScore(False, 0.0, possible)
    except Exception as exc:  # noqa: BLE001 - the sandbox could not start here: say so, no traceback
        say(f"      the grader's sandbox could not run here: {type(exc).__name__}: {str(exc)[:300]}")
        return PublicScore(False, 0.0, possible)
    if attempt is None or attempt.status is AttemptStatus.FAULT:
        say(f"      GRADER FAULT (not your fault): {attempt.reason if attempt else 'no result'}")
        return PublicScore(False, 0.0, possible)
    if attempt.status is AttemptStatus.REJECTED:
        say(f"      REJECTED: {attempt.reason}")
        return PublicScore(False, 0.0, possible)
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
    return PublicScore(all(t.status is TestStatus.PASSED for t in public), earned, possible)
