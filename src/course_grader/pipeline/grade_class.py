"""``grade_class``: a folder of submissions graded into one results folder, with one ``GradeOptions``.

Called by ``course grade run`` (``ui/grade.py``), by the sample grading (``samples.expectations``)
and by the benchmarks. In order:

1. **plan**: every file found (``intake.discover``) and loaded (``submission.load_submission``: lstat
   first, size before hash; a bad file is a rejection with its reason, never a grader fault), one
   counted per (student, exercise); what is unchanged since an earlier run (same attempt key) is skipped;
2. **grade** the rest with an executor (``pipeline.schedule``: here, or on a cluster), which warms up
   first and grades each job with a ``GradingSession``; a job whose measuring child timed out or died
   is graded once more, alone, before it counts. A grader failure is never recorded as a grade: it is
   reported as a fault and the command fails, so a re-run grades it;
3. **publish**: feedback pages, ``grades.csv`` and ``review.csv`` for the whole class, sealed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from compile_course.paths import BUILD
from course_grader import grader_key
from course_grader.config import GradeOptions
from course_grader.errors import GraderError
from course_grader.exercise.model import Exercise
from course_grader.intake.discover import Candidate, choose, discover
from course_grader.intake.load import Loaded
from course_grader.pipeline import cache_store
from course_grader.pipeline.schedule import LocalExecutor, RunSetup, grade_jobs
from course_grader.pipeline.session import instructor_paths
from course_grader.pipeline.submission import Job, Timing, exercise_id, load_submission, read_exercises, rejected
from course_grader.results.attempt import Attempt, attempt_key
from course_grader.results.export import export_grades, export_review
from course_grader.results.feedback import render_all
from course_grader.results.gradebook import Gradebook
from course_grader.results.private import private_dir, seal_tree
from course_grader.results.shown import printable


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


def own_files(out_dir: Path, gradebook: Path) -> tuple[Path, ...]:
    """What a run writes itself: its results folder, its gradebook and SQLite's files beside it."""
    return (out_dir, gradebook, *(gradebook.with_name(gradebook.name + x) for x in ("-wal", "-shm", "-journal")))


def plan(subs: Path, exercises: dict[str, Exercise], only: str | None, max_bytes: int, report: ClassReport,
         skip: tuple[Path, ...] = ()):
    """Find and read every submission (``skip``: the run's own results, never read as hand-ins); choose one per
    (student, exercise). ``(groups, loaded)``."""
    candidates, problems = discover(subs, skip)
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


def _jobs(chosen, loaded, exercises: dict[str, Exercise], book: Gradebook, report: ClassReport,
          grader: str) -> list[Job]:
    """The jobs to grade; files that cannot be graded are recorded as rejections, unchanged ones skipped."""
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
            attempt = rejected(cand, ld, ex, reason, grader)
            if book.record(attempt, grader):
                report.graded.append(attempt)
            else:
                report.skipped += 1
            book.set_current(attempt.student, attempt.exercise, attempt.key, ignored)
            continue
        key = attempt_key(cand.student, ex.id, ld.sha256, ex.sha256, grader)
        if book.has(key):
            report.skipped += 1
            book.set_current(cand.student, ex.id, key, ignored)
        else:
            todo.append(Job(cand, ld, ex, key, ignored))
    return todo


def grade_class(submissions_dir: Path, out_dir: Path | None = None, options: GradeOptions | None = None,
                **settings) -> ClassReport:
    """Grade every submission in ``submissions_dir``; results go to ``out_dir`` only.

    ``options`` (``course_grader.config.GradeOptions``) holds every setting of the run; keyword
    ``settings`` replace some of its fields (``grade_class(subs, out, jobs=2)``), and an unknown one
    is a ``TypeError``. With ``options.executor`` (``pipeline.cluster.DaskExecutor``) the jobs are
    graded on a cluster's workers; discovery, the gradebook, feedback and CSV stay in this process
    either way. Raises ``GraderError`` when nothing can be graded correctly (solutions unreadable, a
    model answer short of full marks)."""
    options = replace(options or GradeOptions(), **settings)
    t0 = time.perf_counter()
    grader = grader_key()
    subs = Path(submissions_dir)
    out_dir = Path(out_dir) if out_dir else options.results_for(subs)
    gradebook = options.gradebook_in(out_dir)
    exercises = read_exercises(options.solutions)
    exercise = options.exercise
    if exercise is not None:
        exercise = exercise_id(exercises, exercise)   # UsageError before anything is created
    doubles = options.host_factory is not None or options.verdict_for is not None
    # the stored warm-up: by default the machine's, with the real host and verdicts; none with test
    # doubles, whose warm-up proves nothing about the real ones
    store = options.store if options.store is not None or doubles else cache_store.default_store()
    if options.host_factory is None and options.executor is None:  # on a cluster, each worker checks for itself
        from course_grader.sandbox.policy import confinement_refusal

        if refusal := confinement_refusal("this process", options.unconfined):
            raise GraderError(refusal)
    private_dir(out_dir)  # 0700: no kernel uid of this or another run can enter it
    cache_store.sweep_run_folders(out_dir)   # compile caches of graders killed before their cleanup
    report = ClassReport(out_dir, gradebook, exercise=exercise)

    with Gradebook(gradebook) as book:
        chosen, loaded = plan(subs, exercises, exercise, options.max_file_bytes, report,
                              skip=own_files(out_dir, gradebook))
        todo = _jobs(chosen, loaded, exercises, book, report, grader)
        if todo:
            # A hidden folder must exist before the host starts: one created later (build/ by a
            # `make course` beside this run) would not be covered inside the sandbox.
            try:
                BUILD.mkdir(parents=True, exist_ok=True)
            except OSError:   # not ours to create (a checkout another user owns): nothing to hide then
                pass
            hashes = {e.id: e.sha256 for e in exercises.values()}
            entry = None
            if store is not None and options.warm:
                entry, problem = cache_store.open_entry(hashes, grader, store)
                if problem:
                    report.problems.append(problem)
            # the store is hidden too, wherever it is
            hide = instructor_paths(options.solutions, out_dir, gradebook.parent, subs,
                                    *([entry.store] if entry else []))
            executor = options.executor or LocalExecutor()
            with executor.session(RunSetup(hide, options, hashes, out_dir, entry)) as run:
                grade_jobs(todo, run, book, report, grader, options.progress)
            report.warm_s, report.cached_replies = run.warm_s, run.cached_replies
            report.sandbox_notices, report.cache_reused = list(run.sandbox_notices), run.cache_reused

        students = {cand.student for cand, _ in chosen}
        render_all(book, out_dir, exercise, students, options.title or f"Grades: {subs.resolve().name}")
        # the class's files stay whole: a run over one exercise or a few files updates its rows, keeps the rest
        export_grades(book, out_dir / "grades.csv")
        export_review(book, out_dir / "review.csv")
        if report.unattributed:
            (out_dir / "unattributed.txt").write_text("".join(printable(line) + "\n" for line in report.unattributed),
                                                      encoding="utf-8")
        seal_tree(out_dir)
    report.total_s = time.perf_counter() - t0
    return report
