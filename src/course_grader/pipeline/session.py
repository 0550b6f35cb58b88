"""``GradingSession``: grading on one started sandbox host, the one sequence every command uses.

``course grade`` (through ``pipeline.schedule``), ``course check`` and each cluster worker open a
session and call ``session.grade(job)`` for every loaded submission; none of them strings the steps
together itself. For one submission the sequence is:

1. **integrity** (``submission.match_cells``): cells matched by course id, locked and test cells
   taken from the exercise; a rejection ends it there; flags and notices are recorded;
2. **feedback run** (``feedback_run``) and **verdicts** (``verdicts.collect``), side by side: the first is
   for the student's eyes only, the second scores;
3. **faults**: a measuring child that timed out or died makes a first run ``Outcome(again=True)``
   (the caller grades it once more, alone); in a final run the fault is worded for the student, or,
   if the grader failed, the attempt is a ``FAULT`` and is never recorded as a grade;
4. **flags** void every passed test until an instructor clears them.

``session.warm_up(exercises)`` grades the model answers first (``pipeline.warmup``). The session
owns the run's ``ReplyCache``; the host is started and stopped by :meth:`GradingSession.open`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from course_grader.config import GradeOptions
from course_grader.errors import GraderError
from course_grader.exercise.model import Exercise
from course_grader.pipeline.feedback_run import FeedbackRun, feedback_run
from course_grader.pipeline.replies import ReplyCache
from course_grader.pipeline.submission import Job, Outcome, Timing, match_cells
from course_grader.pipeline.verdicts import collect, fault_reason, verdict_module
from course_grader.results.attempt import AnswerItem, Attempt
from course_grader.status import AttemptStatus, TestStatus


def default_host(hide: list[Path], compile_cache: Path | None, limits):
    """The sandbox's ``GradingHost`` (a context manager), hiding ``hide`` from every run."""
    from course_grader.sandbox import GradingHost, Limits

    return GradingHost(hide=hide, compile_cache=compile_cache, limits=limits or Limits())


def instructor_paths(solutions: Path, *extra: Path) -> list[Path]:
    """Folders no kernel may see: ``solutions`` (the hidden tests), the sandbox's own list
    (``sandbox.policy.default_hidden``: the grader's package, the course's .git, build/ and tests/),
    plus ``extra`` (the output folder, the gradebook's folder, the submissions)."""
    from course_grader.sandbox.policy import default_hidden

    paths = [solutions, *default_hidden(), *extra]
    return sorted({Path(p).resolve() for p in paths if Path(p).resolve() != Path("/")})


class GradingSession:
    """Grades loaded submissions on one started host, sharing one reply cache; warms up first."""

    def __init__(self, host, options: GradeOptions | None = None, *, compile_cache: Path | None = None,
                 entry=None, cache: ReplyCache | None = None):
        options = options or GradeOptions()
        self.host, self.options = host, options
        self.verdict_for = options.verdict_for or verdict_module
        self.cache = cache if cache is not None else ReplyCache()
        self.compile_cache, self.entry = compile_cache, entry

    @classmethod
    @contextmanager
    def open(cls, hide: list[Path], options: GradeOptions | None = None, *, compile_cache: Path | None = None,
             entry=None) -> Iterator[GradingSession]:
        """Start a host hiding ``hide`` (``options.host_factory``, by default the sandbox's), yield a
        session on it, stop the host when the block ends. ``compile_cache``: the folder the kernels
        share (filled at warm-up); ``entry``: the machine's stored warm-up for this run's key."""
        options = options or GradeOptions()
        factory = options.host_factory or default_host
        with factory(hide, compile_cache, options.limits) as host:
            yield cls(host, options, compile_cache=compile_cache, entry=entry)

    @property
    def notices(self) -> list[str]:
        """What the sandbox could not set up on this host."""
        return [str(n) for n in getattr(self.host, "notices", [])]

    @property
    def cached_replies(self) -> int:
        return self.cache.hits

    def warm_up(self, needed: list[Exercise], may_publish: bool = True) -> bool:
        """Fill the compile cache and prove the model answers of ``needed`` (``pipeline.warmup``).
        True when the machine's stored warm-up already covered all of it."""
        from course_grader.pipeline.warmup import warm_up

        return warm_up(self, needed, may_publish)

    def reuse_stored(self, needed: list[Exercise]) -> bool:
        """Start from the stored warm-up when it covers ``needed``, without warming anything here."""
        from course_grader.pipeline.warmup import reuse_entry

        if self.entry is None or self.compile_cache is None:
            return False
        return reuse_entry(self.entry, needed, self.compile_cache, self.cache)

    def grade(self, job: Job, *, final: bool = False, retried: bool = False, feedback: bool = True) -> Outcome:
        """Grade one loaded submission once. ``final``: this run's faults count (no second run follows);
        ``retried``: this is the second run, alone; ``feedback=False`` skips the feedback run (``course
        check``, the warm-up: it never changes a verdict). Any unexpected failure is a ``GraderError``."""
        try:
            return self._grade(job, final, retried, feedback)
        except GraderError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in the grader, not in the submission
            raise GraderError(f"{type(exc).__name__}: {str(exc)[:300]}") from exc

    def grade_one(self, job: Job, feedback: bool = True) -> Attempt | None:
        """One submission with nothing else to grade (the model answers at warm-up, ``course check``):
        graded, and graded once more (its faults then final) after a measuring fault, as a class run does."""
        outcome = self.grade(job, feedback=feedback)
        if outcome.again:
            outcome = self.grade(job, final=True, retried=True, feedback=feedback)
        return outcome.attempt

    def _grade(self, job: Job, final: bool, retried: bool, feedback: bool) -> Outcome:
        start = time.perf_counter()
        cand, ex, host = job.cand, job.ex, self.host
        attempt = Attempt(job.key, cand.student, ex.id, ex.name, ex.title, cand.rel, job.loaded.sha256, ex.sha256,
                          AttemptStatus.GRADED, auto_possible=ex.auto_points, manual_possible=ex.manual_points,
                          notices=list(job.loaded.notices))
        checked = match_cells(ex, job.loaded.notebook)
        if checked.reject:
            attempt.status, attempt.reason = AttemptStatus.REJECTED, checked.reject
            return Outcome(attempt)
        attempt.flags = [f.line() for f in checked.flags]
        attempt.notices += [f.line() for f in checked.notices]
        attempt.answers = [AnswerItem(c.course_id, ex.question_for(c), checked.answers.get(c.course_id, ""),
                                      c.rubric, c.points)
                           for c in ex.answers]
        shown = FeedbackRun()
        if not feedback:
            judged = collect(ex, checked, host, self.verdict_for, self.cache)
        elif retried:
            # the second run of a submission is alone: nothing else runs, not even its own feedback kernel
            shown = feedback_run(host, checked)
            judged = collect(ex, checked, host, self.verdict_for, self.cache)
        else:
            # the feedback kernel and the measuring children are independent: run them side by side
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedback") as side:
                running = side.submit(feedback_run, host, checked)
                judged = collect(ex, checked, host, self.verdict_for, self.cache)
                shown = running.result()
        attempt.cells, attempt.notes = shown.cells, shown.notes
        if judged.faults and not final:
            return Outcome(None, None, again=True)
        attempt.tests = judged.tests
        if judged.faults:
            worded = fault_reason(judged.faults, retried)
            if worded.grader_fault:
                attempt.status, attempt.reason = AttemptStatus.FAULT, worded.text
                return Outcome(attempt)
            attempt.reason = worded.text
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
        return Outcome(attempt, Timing(cand.rel, attempt.seconds, shown.student_cpu_s, judged.seconds))
