"""``grade_class``: the one function that grades a folder of submissions.

Called by ``course grade`` (cli.py), by the sample grading of ``course run``
(:func:`grade_samples`) and by the benchmarks. Per submission:

1. **load** (``discover`` + ``load``): lstat first, size before hash; a bad file is
   a rejection with its reason, never a grader fault;
2. **integrity**: cells matched by course id, locked and test cells taken from the
   exercise, findings reported; a flag voids the points until an instructor clears it;
3. **feedback run**: the assembled notebook (locked code and the student's cells; no test
   cell, never a hidden test) runs in ``host.notebook_kernel()``. Its output
   and errors are shown to the student and never change a score;
4. **verdicts**: ``verdict.testcells.grade(GradeContext(...))`` runs the exercise's test cells, which compute
   one ``TestVerdict`` per graded test cell in this (trusted) process, from data
   replied by measuring children. A hidden test keeps only id, points and pass/fail.

A measuring child that timed out or died gets the whole submission re-graded once,
alone (after every other job has finished), before its result counts; the reason
then says whether the student's code used up a limit or the grader failed. A grader
failure is never recorded as a grade: the attempt is reported as a fault and the
command fails, so a re-run grades it.

Before any student is graded, each involved exercise's own model answers are graded
inside ``host.warming()``: that fills the compile cache the kernels then share
read-only, and proves the exercise's verdicts work. A model answer without full auto
marks stops the run with a clear error (a grader fault, not the students').
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compile_course.paths import BUILD
from course_grader import grader_key
from course_grader.config import GradeOptions
from course_grader.errors import GraderError, UsageError
from course_grader.exercise.model import Exercise, ExerciseFormatError, load_exercises
from course_grader.exercise.release import answered_notebook
from course_grader.intake.discover import Candidate, choose, discover
from course_grader.intake.integrity import Checked, check
from course_grader.intake.load import MAX_FILE_BYTES, Loaded, read_submission
from course_grader.pipeline import cache_store
from course_grader.results.export import export_grades, export_review
from course_grader.results.feedback import render_all
from course_grader.results.gradebook import AnswerItem, Attempt, CellRecord, Gradebook, TestResult, attempt_key
from course_grader.results.private import grading_root, private_dir, seal_tree
from course_grader.results.shown import printable
from course_grader.status import AttemptStatus, CellRole, CellStatus, FaultKind, TestStatus

CELL_OUTPUT_CHARS = 20_000
MAX_NOTES = 20


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
class Timing:
    path: str
    seconds: float          # wall time of the whole submission (feedback run + verdicts)
    student_cpu_s: float    # CPU time the feedback kernel reported for the student's own cells
    verdict_s: float


@dataclass
class ClassReport:
    out_dir: Path
    gradebook: Path
    exercise: str | None = None                             # the --exercise graded (its id), or all
    graded: list[Attempt] = field(default_factory=list)      # recorded in this run
    skipped: int = 0                                        # unchanged since an earlier run
    unattributed: list[str] = field(default_factory=list)   # files no student could be told from
    duplicates: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)       # folders that could not be read
    faults: list[str] = field(default_factory=list)         # grader faults: the command fails
    retried: list[str] = field(default_factory=list)
    timings: list[Timing] = field(default_factory=list)
    warm_s: float = 0.0
    sandbox_notices: list[str] = field(default_factory=list)  # what the sandbox could not set up
    cache_reused: bool = False  # the stored warm-up of an identical earlier run covered every exercise
    total_s: float = 0.0
    cached_replies: int = 0                                 # measuring requests answered from this run's cache

    @property
    def ok(self) -> bool:
        return not self.faults


# ---------------------------------------------------------------- the grading context


def verdict_module(ex: Exercise):
    """``(grade, harness)`` for an exercise: its own test cells, run by ``course_grader.verdict.testcells``."""
    from course_grader.verdict import testcells

    return testcells.grade, testcells.HARNESS


class ReplyCache:
    """Successful measuring replies of one grading run, by (harness, entry, payload).

    A measuring child sees nothing but its payload, so two requests with equal payloads ask
    the same question: the instructor's own reference measurements (a payload without student
    code) are made once per run, during warm-up, and every student is judged against the same
    ones. Faults are never cached."""

    def __init__(self):
        self.replies: dict[tuple[str, str, str], str] = {}
        self.lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def key(harness: str, entry: str, payload: dict) -> tuple[str, str, str]:
        return harness, entry, json.dumps(payload, sort_keys=True, separators=(",", ":"))

    def get(self, key) -> dict | None:
        with self.lock:
            text = self.replies.get(key)
            if text is not None:
                self.hits += 1
        return None if text is None else json.loads(text)

    def put(self, key, reply: dict) -> None:
        with self.lock:
            self.replies[key] = json.dumps(reply)

    def dump(self) -> list[list[str]]:
        """Every reply as ``[harness, entry, payload, reply]`` strings (for the stored warm-up)."""
        with self.lock:
            return [[*key, text] for key, text in sorted(self.replies.items())]

    def absorb(self, rows: list) -> None:
        """Add the replies of :meth:`dump` (a stored warm-up of the same torch, grader and exercises)."""
        with self.lock:
            for row in rows:
                if isinstance(row, list) and len(row) == 4 and all(isinstance(x, str) for x in row):
                    self.replies.setdefault(tuple(row[:3]), row[3])


class _Measurer:
    """``ctx.measure`` for one submission: GradingHost measuring children (through the run's reply
    cache), remembering every fault.

    Questions about the student's code, replays and reference questions each get their own child,
    kept for the submission's later questions of the same kind (``GradingHost.session``): never
    mixed, never shared with another submission. ``close()`` ends them."""

    def __init__(self, host, harness: str, cache: ReplyCache | None = None):
        self.host, self.harness, self.cache = host, harness, cache
        self.faults: list[tuple[str, Any]] = []
        self.seconds = 0.0
        self.sessions: dict[str, Any] = {}

    @staticmethod
    def kind(entry: str, payload: dict) -> str:
        if entry in ("replay", "replay_answer"):   # a replay with the answer loaded: a child of its own too
            return entry
        return "student" if payload.get("function") is not None else "reference"

    def _ask(self, entry: str, payload: dict) -> dict:
        if not hasattr(self.host, "session"):
            return self.host.measure(self.harness, entry, payload)
        kind = self.kind(entry, payload)
        if kind not in self.sessions:
            self.sessions[kind] = self.host.session()
        return self.sessions[kind].measure(self.harness, entry, payload)

    def __call__(self, entry: str, payload: dict) -> dict:
        from course_grader.sandbox import SandboxFault

        start = time.perf_counter()
        key = ReplyCache.key(self.harness, entry, payload) if self.cache is not None else None
        try:
            if key is not None and (hit := self.cache.get(key)) is not None:
                return hit
            reply = self._ask(entry, payload)
            if key is not None:
                self.cache.put(key, reply)
            return reply
        except SandboxFault as fault:
            self.faults.append((entry, fault))
            raise
        finally:
            self.seconds += time.perf_counter() - start

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()


# ---------------------------------------------------------------- one submission


@dataclass
class Job:
    cand: Candidate
    loaded: Loaded
    ex: Exercise
    key: str
    ignored: list[str]


def _cap(text: str | None, limit: int = CELL_OUTPUT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def feedback_run(host, checked: Checked) -> tuple[list[CellRecord], list[str], float]:
    """Run the assembled notebook for the student's information. ``(cells, notes, student cpu s)``."""
    records: list[CellRecord] = []
    notes: list[str] = []
    student_cpu = 0.0
    if not checked.run_cells:
        return records, notes, student_cpu
    from course_grader.sandbox import SandboxFault

    try:
        with host.notebook_kernel() as kernel:
            stopped = None
            for cell in checked.run_cells:
                if stopped is not None:
                    records.append(CellRecord(cell.label, CellStatus.NOT_RUN, "", f"not run: {stopped}"))
                    continue
                result = kernel.run_cell(cell.source, cell.cell_id)
                status = CellStatus(result.status)
                if CellRole(cell.role).students:
                    student_cpu += float(result.cpu_s or 0.0)
                records.append(CellRecord(cell.label, status, _cap(result.output), _cap(result.error)))
                if status is CellStatus.ERROR and CellRole(cell.role).students and len(notes) < MAX_NOTES:
                    error = (result.error or "").strip()
                    first = error.splitlines()[0][:300] if error else "an error"
                    notes.append(f"{cell.label} raised {first}")
                elif status in (CellStatus.TIMEOUT, CellStatus.DIED):
                    what = (FaultKind(result.fault).wording if result.fault is not None
                            else FaultKind.CPU_TIME.wording if status is CellStatus.TIMEOUT else "ended the kernel")
                    notes.append(f"{cell.label} {what}" + (f": {result.error.strip().splitlines()[0][:300]}"
                                                           if (result.error or "").strip() else ""))
                    stopped = f"{cell.label} {what}"
    except SandboxFault as fault:
        notes.append(f"the feedback run could not be completed ({fault.kind}: {fault.detail[:200]}); "
                     "it never affects your score")
    return records, notes, student_cpu


def verdicts(ex: Exercise, checked: Checked, host, verdict_for, cache: ReplyCache | None = None
             ) -> tuple[list[TestResult], list[tuple[str, Any]], float]:
    """One ``TestResult`` per graded test cell, in the exercise's order; plus the measuring faults.

    Raises ``GraderError`` when the exercise's verdict code misbehaves (missing or unknown test ids,
    wrong types, an exception of its own)."""
    if not ex.tests:
        return [], [], 0.0
    try:
        grade, harness = verdict_for(ex)
    except Exception as exc:  # noqa: BLE001 - missing or broken verdict code is the grader's fault
        raise GraderError(f"{ex.id} has no usable verdict code: {type(exc).__name__}: {str(exc)[:300]}") from exc
    measurer = _Measurer(host, harness, cache)
    from course_grader.sandbox import SandboxFault
    from course_grader.verdict.context import AnswerError, GradeContext

    context = GradeContext(ex, dict(checked.cells), measurer)

    try:
        got = grade(context)
    except SandboxFault as fault:
        # the verdict code let a measuring fault through: every test of the submission waits on it
        if not measurer.faults:
            measurer.faults.append(("grade", fault))
        reason = f"not measured: {fault.kind}"
        return [TestResult(t.course_id, t.hidden, t.points, TestStatus.NOT_RUN, "" if t.hidden else reason)
                for t in ex.tests], measurer.faults, measurer.seconds
    except (RecursionError, MemoryError) as exc:  # an answer too deep or too big for the parser: the student's
        reason = f"your answer could not be read ({type(exc).__name__}: it is nested too deeply or too large)"
        return [TestResult(t.course_id, t.hidden, t.points, TestStatus.FAILED, "" if t.hidden else reason)
                for t in ex.tests], measurer.faults, measurer.seconds
    except AnswerError as exc:  # the verdict code should catch it per test; if not, it fails them all
        return [TestResult(t.course_id, t.hidden, t.points, TestStatus.FAILED, "" if t.hidden else str(exc)[:2000])
                for t in ex.tests], measurer.faults, measurer.seconds
    except Exception as exc:  # noqa: BLE001 - the verdict code is the grader's: its failure is a grader fault
        raise GraderError(f"{ex.id} verdict code failed: {type(exc).__name__}: {str(exc)[:300]}") from exc
    finally:
        measurer.close()  # the submission's measuring children end with its verdicts
    by_id: dict[str, Any] = {}
    for v in got or []:
        tid = getattr(v, "test_id", None)
        if not isinstance(tid, str) or tid in by_id:
            raise GraderError(f"{ex.id} verdict code returned a bad or repeated test id {tid!r}")
        if type(getattr(v, "passed", None)) is not bool or not isinstance(getattr(v, "message", ""), str):
            raise GraderError(f"{ex.id} verdict for {tid}: passed must be a bool and message a str")
        by_id[tid] = v
    expected = [t.course_id for t in ex.tests]
    if set(by_id) != set(expected):
        raise GraderError(f"{ex.id} verdict code answered {sorted(by_id)}, the exercise grades {expected}")
    results = []
    for t in ex.tests:
        v = by_id[t.course_id]
        results.append(TestResult(t.course_id, t.hidden, t.points, TestStatus.PASSED if v.passed else TestStatus.FAILED,
                                  "" if t.hidden else (v.message or "")[:4000]))
    return results, measurer.faults, measurer.seconds


def _fault_reason(faults: list[tuple[str, Any]], retried: bool) -> tuple[bool, str]:
    """``(grader's fault, reason for the student)`` for the faults of a submission's final run."""
    for entry, fault in faults:
        if FaultKind(fault.kind) is FaultKind.GRADER:
            return True, f"the grader failed while measuring {entry} ({fault.detail[:200]}); this is not your fault"
    entry, fault = faults[0]
    return False, (f"your code {FaultKind(fault.kind).wording} while the grader measured {entry}"
                   f"{': ' + fault.detail[:200] if fault.detail else ''}"
                   f"{' (confirmed by a second run, alone)' if retried else ''}")


def match_cells(ex: Exercise, notebook: dict) -> Checked:
    """The integrity step: ``integrity.check``, where a notebook whose cells cannot even be matched
    is a rejection (``Checked.reject``), never a stopped batch. ``course check``/``submit`` call it too."""
    try:
        return check(ex, notebook)
    except Exception as exc:  # noqa: BLE001 - a malformed notebook is the file's problem, never a stopped batch
        return Checked(reject=f"the notebook's cells could not be matched to the exercise ({type(exc).__name__})")


def grade_submission(job: Job, host, verdict_for, final: bool, retried: bool = False,
                     cache: ReplyCache | None = None, feedback: bool = True
                     ) -> tuple[Attempt | None, Timing | None, bool]:
    """``(attempt, timing, needs a second run alone)``; the attempt is None when it must be re-run.

    ``final``: this run's faults count (no second run follows); ``retried``: this is the second run.
    ``feedback=False`` skips the feedback run (``course check``: it never changes a verdict)."""
    start = time.perf_counter()
    cand, ex = job.cand, job.ex
    attempt = Attempt(job.key, cand.student, ex.id, ex.name, ex.title, cand.rel, job.loaded.sha256, ex.sha256,
                      AttemptStatus.GRADED, auto_possible=ex.auto_points, manual_possible=ex.manual_points,
                      notices=list(job.loaded.notices))
    checked = match_cells(ex, job.loaded.notebook)
    if checked.reject:
        attempt.status, attempt.reason = AttemptStatus.REJECTED, checked.reject
        return attempt, None, False
    attempt.flags = [f.line() for f in checked.flags]
    attempt.notices += [f.line() for f in checked.notices]
    attempt.answers = [AnswerItem(c.course_id, ex.question_for(c), checked.answers.get(c.course_id, ""),
                                  c.rubric, c.points)
                       for c in ex.answers]
    student_cpu = 0.0
    if not feedback:
        tests, faults, verdict_s = verdicts(ex, checked, host, verdict_for, cache)
    elif retried:
        # the second run of a submission is alone: nothing else runs, not even its own feedback kernel
        attempt.cells, attempt.notes, student_cpu = feedback_run(host, checked)
        tests, faults, verdict_s = verdicts(ex, checked, host, verdict_for, cache)
    else:
        # the feedback kernel and the measuring children are independent: run them side by side
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedback") as side:
            feedback = side.submit(feedback_run, host, checked)
            tests, faults, verdict_s = verdicts(ex, checked, host, verdict_for, cache)
            attempt.cells, attempt.notes, student_cpu = feedback.result()
    if faults and not final:
        return None, None, True
    attempt.tests = tests
    if faults:
        grader_fault, reason = _fault_reason(faults, retried)
        if grader_fault:
            attempt.status, attempt.reason = AttemptStatus.FAULT, reason
            return attempt, None, False
        attempt.reason = reason
    if attempt.flags:
        for t in attempt.tests:
            if t.status is TestStatus.PASSED:
                t.status = TestStatus.VOIDED
        attempt.status = AttemptStatus.FLAGGED
        attempt.reason = (f"flagged for the instructor: {attempt.flags[0]}"
                          + (f" (+{len(attempt.flags) - 1} more)" if len(attempt.flags) > 1 else ""))
    elif not attempt.reason and attempt.auto_score == 0 and attempt.notes and ex.tests:
        attempt.reason = attempt.notes[0]
    attempt.seconds = time.perf_counter() - start
    return attempt, Timing(cand.rel, attempt.seconds, student_cpu, verdict_s), False


def grade_one(job: Job, host, verdict_for, cache: ReplyCache | None = None, feedback: bool = True) -> Attempt | None:
    """One submission with nothing else to grade (the model answers at warm-up, ``course check``):
    graded, and graded once more (its faults then final) after a measuring fault, as a class run does."""
    attempt, _, again = grade_submission(job, host, verdict_for, final=False, cache=cache, feedback=feedback)
    if again:
        attempt, _, _ = grade_submission(job, host, verdict_for, final=True, retried=True, cache=cache,
                                         feedback=feedback)
    return attempt


def _rejected(cand: Candidate, loaded: Loaded, ex: Exercise | None, exercises: dict[str, Exercise],
              reason: str) -> Attempt:
    exercise = cand.exercise or ""
    key = attempt_key(cand.student, exercise or cand.rel, loaded.sha256 or f"unread:{reason}",
                      ex.sha256 if ex else "", grader_key())
    return Attempt(key, cand.student, exercise or cand.rel, ex.name if ex else "", ex.title if ex else "", cand.rel,
                   loaded.sha256, ex.sha256 if ex else "", AttemptStatus.REJECTED, reason,
                   auto_possible=ex.auto_points if ex else 0.0, manual_possible=ex.manual_points if ex else 0.0,
                   notices=list(loaded.notices))


# ---------------------------------------------------------------- the class


def instructor_paths(solutions: Path, *extra: Path) -> list[Path]:
    """Folders no kernel may see: ``solutions`` (the hidden tests), the sandbox's own list
    (``sandbox.host.default_hidden``: the grader's package, the course's .git, build/ and tests/),
    plus ``extra`` (the output folder, the gradebook's folder, the submissions)."""
    from course_grader.sandbox.host import default_hidden

    paths = [solutions, *default_hidden(), *extra]
    return sorted({Path(p).resolve() for p in paths if Path(p).resolve() != Path("/")})


def default_out_dir(submissions_dir: Path) -> Path:
    """``build/grading/<name of the folder>`` (or ``~/course-grading/<name>``: ``private.grading_root``)."""
    return grading_root()[0] / Path(submissions_dir).resolve().name


def default_host(hide: list[Path], compile_cache: Path | None, limits):
    from course_grader.sandbox import GradingHost, Limits

    return GradingHost(hide=hide, compile_cache=compile_cache, limits=limits or Limits())


def load_submission(cand: Candidate, max_bytes: int = MAX_FILE_BYTES) -> Loaded:
    """The load step: ``load.read_submission``, where even an unexpected failure is a rejection with
    a reason, never a stopped batch. ``course check``/``submit`` call it too."""
    try:
        return read_submission(cand, max_bytes)
    except Exception as exc:  # noqa: BLE001 - a bad file is a rejection, never a stopped batch
        return Loaded(cand, reason=f"cannot be read ({type(exc).__name__})")


def _plan(subs: Path, exercises: dict[str, Exercise], only: str | None, max_bytes: int, report: ClassReport):
    """Find and read every submission; choose one per (student, exercise). ``(groups, loaded)``."""
    candidates, problems = discover(subs)
    report.problems += problems
    if only:
        candidates = [c for c in candidates if c.exercise == only]
    loaded: dict[str, Loaded] = {}
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for cand in candidates:
        loaded[cand.rel] = load_submission(cand, max_bytes)
        if cand.student is None:
            report.unattributed.append(f"{cand.rel}: {cand.reason or loaded[cand.rel].reason}")
            continue
        groups.setdefault((cand.student, cand.exercise or cand.rel), []).append(cand)

    def gradable(c: Candidate) -> bool:
        return loaded[c.rel].ok and c.exercise in exercises

    chosen = []
    for (student, exercise), group in sorted(groups.items()):
        counted, ignored = choose(group, gradable)
        if ignored:
            report.duplicates.append(f"{student}/{exercise}: {len(group)} files; counted {counted.rel}, "
                                     f"ignored {', '.join(c.rel for c in ignored)}")
        chosen.append((counted, [c.rel for c in ignored]))
    return chosen, loaded


def grade_class(submissions_dir: Path, out_dir: Path | None = None, options: GradeOptions | None = None,
                **settings) -> ClassReport:
    """Grade every submission in ``submissions_dir``; results go to ``out_dir`` only.

    ``options`` (``course_grader.config.GradeOptions``) holds every setting of the run; keyword
    ``settings`` replace some of its fields (``grade_class(subs, out, jobs=2)``), and an unknown one
    is a ``TypeError``.

    ``host_factory(hide, compile_cache, limits)`` and ``verdict_for(exercise) -> (grade, harness)``
    exist for tests; by default they are the sandbox's ``GradingHost`` and
    the exercise's test cells (``course_grader.verdict.testcells``). ``store`` keeps the warm-up between runs
    (``cache_store``): by default ``cache_store.default_store()`` with the real host and verdicts, and
    none with test doubles, whose warm-up proves nothing about the real ones.
    ``executor`` (``course_grader.pipeline.cluster.DaskExecutor``) grades on a cluster's workers instead
    of here; discovery, the gradebook, feedback and CSV stay in this process either way. Raises
    ``GraderError`` when nothing can be graded correctly (solutions unreadable, a model answer
    short of full marks)."""
    options = replace(options or GradeOptions(), **settings)
    gradebook, solutions, exercise, jobs = options.gradebook, options.solutions, options.exercise, options.jobs
    limits, progress, warm, max_file_bytes = options.limits, options.progress, options.warm, options.max_file_bytes
    host_factory, verdict_for, title = options.host_factory, options.verdict_for, options.title
    executor, unconfined, store = options.executor, options.unconfined, options.store
    t0 = time.perf_counter()
    subs = Path(submissions_dir)
    out_dir = Path(out_dir) if out_dir else default_out_dir(subs)
    gradebook = Path(gradebook) if gradebook else out_dir / "gradebook.sqlite"
    exercises = read_exercises(solutions)
    if exercise is not None:
        exercise = exercise_id(exercises, exercise)   # UsageError before anything is created
    if store is None and host_factory is None and verdict_for is None:
        store = cache_store.default_store()
    verdict_for = verdict_for or verdict_module
    if host_factory is None and executor is None:  # on a cluster, each worker checks for itself
        from course_grader.sandbox.host import confinement_refusal

        if refusal := confinement_refusal("this process", unconfined):
            raise GraderError(refusal)
    host_factory = host_factory or default_host
    private_dir(out_dir)  # 0700: no kernel uid of this or another run can enter it
    cache_store.sweep_run_folders(out_dir)   # compile caches of graders killed before their cleanup
    report = ClassReport(out_dir, gradebook, exercise=exercise)

    with Gradebook(gradebook) as book:
        chosen, loaded = _plan(subs, exercises, exercise, max_file_bytes, report)
        todo: list[Job] = []
        for cand, ignored in chosen:
            ld = loaded[cand.rel]
            ex = exercises.get(cand.exercise or "")
            if ex is None or not ld.ok:
                if ex is not None:
                    reason = ld.reason
                elif cand.exercise:
                    reason = f"no exercise matches this file name (known: {', '.join(exercises)})"
                else:
                    reason = cand.reason or "the file name names no exercise"
                attempt = _rejected(cand, ld, ex, exercises, reason)
                if book.record(attempt, grader_key()):
                    report.graded.append(attempt)
                else:
                    report.skipped += 1
                book.set_current(attempt.student, attempt.exercise, attempt.key, ignored)
                continue
            key = attempt_key(cand.student, ex.id, ld.sha256, ex.sha256, grader_key())
            if book.has(key):
                report.skipped += 1
                book.set_current(cand.student, ex.id, key, ignored)
            else:
                todo.append(Job(cand, ld, ex, key, ignored))

        if todo:
            # A hidden folder must exist before the host starts: one created later (build/ by a
            # `make course` beside this run) would not be covered inside the sandbox.
            try:
                BUILD.mkdir(parents=True, exist_ok=True)
            except OSError:   # not ours to create (a checkout another user owns): nothing to hide then
                pass
            entry = None
            if store is not None and warm:
                entry, problem = cache_store.open_entry({e.id: e.sha256 for e in exercises.values()},
                                                        grader_key(), store)
                if problem:
                    report.problems.append(problem)
            # the store is hidden too, wherever it is
            hide = instructor_paths(solutions, out_dir, gradebook.parent, subs, *([entry.store] if entry else []))
            if executor is not None:
                # each worker holds its own host and warm cache; attempts come back here to be recorded
                with executor.session(hide, limits, warm, progress, host_factory, verdict_for, unconfined=unconfined,
                                      exercise_hashes={e.id: e.sha256 for e in exercises.values()}) as remote:
                    _grade_jobs(todo, None, verdict_for, jobs, progress, book, report, None, remote)
                report.warm_s, report.cached_replies = remote.warm_s, remote.cached_replies
                report.sandbox_notices, report.cache_reused = remote.sandbox_notices, remote.cache_reused
            else:
                with ExitStack() as stack:
                    compile_cache = None
                    if warm:  # filled by warm_up, from the last identical run's when there is one
                        compile_cache = cache_store.new_folder(out_dir)
                        stack.callback(shutil.rmtree, compile_cache, True)
                    host = stack.enter_context(host_factory(hide, compile_cache, limits))
                    report.sandbox_notices = list(getattr(host, "notices", []))
                    cache = ReplyCache()
                    if warm:
                        w0 = time.perf_counter()
                        report.cache_reused = warm_up(host, [exercises[e] for e in sorted({j.ex.id for j in todo})],
                                                      verdict_for, progress, cache, jobs, compile_cache, entry)
                        report.warm_s = time.perf_counter() - w0
                    _grade_jobs(todo, host, verdict_for, jobs, progress, book, report, cache)
                    report.cached_replies = cache.hits

        students = {cand.student for cand, _ in chosen}
        render_all(book, out_dir, exercise, students, title or f"Grades: {subs.resolve().name}")
        # the class's files stay whole: a run over one exercise or a few files updates its rows, keeps the rest
        export_grades(book, out_dir / "grades.csv")
        export_review(book, out_dir / "review.csv")
        if report.unattributed:
            (out_dir / "unattributed.txt").write_text("".join(printable(line) + "\n" for line in report.unattributed),
                                                      encoding="utf-8")
        seal_tree(out_dir)
    report.total_s = time.perf_counter() - t0
    return report


def _missing(record: dict | None, needed: list[Exercise]) -> list[Exercise]:
    """The exercises of ``needed`` that a store entry's record has not warmed (or warmed at another version)."""
    done = (record or {}).get("exercises") or {}
    return [ex for ex in needed if done.get(ex.id) != ex.sha256]


def reuse_entry(entry: cache_store.Entry, needed: list[Exercise], folder: Path, cache: ReplyCache) -> bool:
    """When the store's entry already covers ``needed``: its compile cache copied into ``folder`` and its
    replies into ``cache`` (under the entry's shared lock), and True. Otherwise nothing changes: False."""
    with entry.lock(exclusive=False):
        record = entry.record()
        if record is not None and not _missing(record, needed) and entry.copy_into(folder):
            cache.absorb(record.get("replies") or [])
            return True
    return False


def warm_up(host, needed: list[Exercise], verdict_for, progress: bool, cache: ReplyCache, jobs: int,
            folder: Path | None, entry: cache_store.Entry | None, may_publish: bool = True) -> bool:
    """Make ``host`` ready to grade ``needed``: its compile cache filled, the model answers proven,
    their replies in ``cache``. Returns True when the store's entry already held all of it.

    An identical earlier run (same torch, grader code and exercises) warmed up on this machine
    and published its entry: the compile cache is copied from it into ``folder`` (before any
    run starts) and its replies are reused, so the model answers are not graded again. The
    exercises it lacks are warmed here, under the entry's exclusive lock (a second grader of
    the same key waits, then reuses this one's), and published unless ``may_publish`` is false.
    """
    needed = [ex for ex in needed if ex.tests]
    if entry is None or folder is None:
        if folder is not None:
            cache_store.seed_compiled_kernels(folder)
        _warm(host, [ex.id for ex in needed], {ex.id: ex for ex in needed}, verdict_for, progress, cache, jobs)
        return False

    if reuse_entry(entry, needed, folder, cache):
        if progress:
            print(f"warm-up of {', '.join(ex.name for ex in needed)} reused from an identical earlier run "
                  f"(store key {entry.key})", file=sys.stderr)
        return True
    with entry.lock(exclusive=True):
        record = entry.record()
        if record is not None and entry.copy_into(folder):
            cache.absorb(record.get("replies") or [])
        else:
            record = None
        todo = _missing(record, needed)
        if todo:
            if record is None:   # a new store entry: start from the machine's compiled C++, not from nothing
                cache_store.seed_compiled_kernels(folder)
            _warm(host, [ex.id for ex in todo], {ex.id: ex for ex in todo}, verdict_for, progress, cache, jobs)
            if may_publish:   # model answers only: no student code has run in this host yet
                done = {**((record or {}).get("exercises") or {}), **{ex.id: ex.sha256 for ex in todo}}
                entry.publish(folder, done, cache.dump())
        return not todo


def _warm(host, exercise_ids: list[str], exercises: dict[str, Exercise], verdict_for, progress: bool,
          cache: ReplyCache, jobs: int = 1) -> None:
    """Grade each exercise's model answers inside ``host.warming()``; stop unless each gets full auto marks."""
    def one(ex: Exercise) -> None:
        start = time.perf_counter()
        nb = answered_notebook(ex)
        cand = Candidate(f"model answers of {ex.name}", ex.path, "instructor", ex.id)
        job = Job(cand, Loaded(cand, ex.sha256, nb), ex, "warm", [])
        # verdicts only: the feedback run never changes a score, and the questions the tests ask of the
        # model answers (the same compiles a student's notebook makes) are what fill the compile cache
        attempt = grade_one(job, host, verdict_for, cache, feedback=False)
        if attempt is None or attempt.status is not AttemptStatus.GRADED or attempt.auto_score != ex.auto_points:
            detail = "; ".join(f"{t.test_id}: {t.status}{' - ' + t.message[:200] if t.message else ''}"
                               for t in (attempt.tests if attempt else []) if t.status is not TestStatus.PASSED)
            raise GraderError(f"the model answers of {ex.name} do not get full marks "
                              f"({attempt.auto_score if attempt else 0:g}/{ex.auto_points:g}; "
                              f"{attempt.reason if attempt else ''} {detail}); nothing was graded")
        if progress:
            print(f"compile cache warmed with the model answers of {ex.name} "
                  f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)

    todo = [exercises[eid] for eid in exercise_ids if exercises[eid].tests]
    # Set-up, not grading: two exercises at a time even with --jobs 1 (no student code runs yet).
    workers = max(1, min(len(todo), max(2, jobs)))
    with host.warming(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix="warm") as pool:
        for _ in pool.map(one, todo):   # re-raises the first failure
            pass


def _grade_jobs(todo: list[Job], host, verdict_for, jobs: int, progress: bool, book: Gradebook,
                report: ClassReport, cache: ReplyCache, remote=None) -> None:
    """Grade ``todo`` here (``host``, ``jobs`` threads) or, given ``remote`` (a cluster session), on
    its workers: ``remote.first_pass(todo)`` yields ``(job, outcome)`` as jobs finish, ``outcome()``
    returning what ``grade_submission`` returned there, and ``remote.alone(job)`` is a second run
    with nothing else running. Either way attempts are recorded here, and only complete ones."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="nb", desc="grading", file=sys.stderr, dynamic_ncols=True)
    retry: list[Job] = []

    def finish(job: Job, result) -> None:
        attempt, timing, again = result
        if again:
            retry.append(job)
            return
        if attempt.status is AttemptStatus.FAULT:
            report.faults.append(f"{job.cand.rel}: {attempt.reason}")
        else:
            if book.record(attempt, grader_key()):
                report.graded.append(attempt)
            book.set_current(attempt.student, attempt.exercise, attempt.key, job.ignored)
            if timing:
                report.timings.append(timing)
        if bar:
            bar.update(1)

    def run(job: Job, final: bool):
        try:
            return grade_submission(job, host, verdict_for, final, retried=final, cache=cache)
        except GraderError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in the grader, not in the submission
            raise GraderError(f"{type(exc).__name__}: {str(exc)[:300]}") from exc

    if remote is not None:
        for job, outcome in remote.first_pass(todo):
            try:
                finish(job, outcome())
            except GraderError as exc:
                report.faults.append(f"{job.cand.rel}: grader fault: {exc}")
                if bar:
                    bar.update(1)
    else:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            pending = {pool.submit(run, job, False): job for job in todo}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    job = pending.pop(fut)
                    try:
                        finish(job, fut.result())
                    except GraderError as exc:
                        report.faults.append(f"{job.cand.rel}: grader fault: {exc}")
                        if bar:
                            bar.update(1)
    # Second runs, one at a time, with nothing else running.
    for job in retry:
        report.retried.append(job.cand.rel)
        try:
            finish(job, run(job, True) if remote is None else remote.alone(job))
        except GraderError as exc:
            report.faults.append(f"{job.cand.rel}: grader fault: {exc}")
            if bar:
                bar.update(1)
    if bar:
        bar.close()
