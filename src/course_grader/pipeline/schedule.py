"""Scheduling: who grades a class's jobs (an ``Executor``), and the one loop that takes their outcomes back.

An executor's ``session(setup)`` is a context manager yielding a run with three steps:

* ``prepare(todo)``: set up before any submission (start hosts, warm up with the model answers);
* ``first_pass(todo)``: grade every job once, yielding ``(job, outcome)`` as jobs finish, where
  ``outcome()`` returns the job's ``Outcome`` or raises ``GraderError``;
* ``alone(job)``: a second run of a job with nothing else running (after a measuring fault);

and, once the block ends, the figures ``warm_s``, ``cached_replies``, ``sandbox_notices`` and
``cache_reused``. :class:`LocalExecutor` grades here, on one ``GradingSession`` with ``options.jobs``
threads; ``pipeline.cluster.DaskExecutor`` implements the same interface on a cluster's workers.
:func:`grade_jobs` drives either, and records attempts in this process's gradebook, complete ones only.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from course_grader.config import GradeOptions
from course_grader.errors import GraderError
from course_grader.pipeline import cache_store
from course_grader.pipeline.session import GradingSession
from course_grader.pipeline.submission import Job, Outcome
from course_grader.results.gradebook import Gradebook
from course_grader.status import AttemptStatus


@dataclass(frozen=True)
class RunSetup:
    """What an executor needs to grade one class run."""

    hide: list[Path]                            # folders no student run may see
    options: GradeOptions
    exercise_hashes: dict[str, str] = field(default_factory=dict)   # every exercise's: the stored warm-up's key
    scratch: Path | None = None                 # where a local run keeps its compile cache (the results folder)
    entry: cache_store.Entry | None = None      # this machine's stored warm-up, for a local run


class Run(Protocol):
    warm_s: float
    cached_replies: int
    sandbox_notices: list[str]
    cache_reused: bool

    def prepare(self, todo: list[Job]) -> None: ...

    def first_pass(self, todo: list[Job]) -> Iterator[tuple[Job, Callable[[], Outcome]]]: ...

    def alone(self, job: Job) -> Outcome: ...


class Executor(Protocol):
    def session(self, setup: RunSetup) -> AbstractContextManager[Run]: ...


class LocalRun:
    """A class run on this machine: one ``GradingSession``, ``jobs`` submissions at once."""

    def __init__(self, session: GradingSession):
        self.session = session
        self.warm_s, self.cached_replies, self.cache_reused = 0.0, 0, False
        self.sandbox_notices = session.notices

    def prepare(self, todo: list[Job]) -> None:
        start = time.perf_counter()
        self.cache_reused = self.session.warm_up([ex for _, ex in sorted({j.ex.id: j.ex for j in todo}.items())])
        self.warm_s = time.perf_counter() - start

    def first_pass(self, todo: list[Job]) -> Iterator[tuple[Job, Callable[[], Outcome]]]:
        with ThreadPoolExecutor(max_workers=max(1, self.session.options.jobs)) as pool:
            pending = {pool.submit(self.session.grade, job): job for job in todo}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield pending.pop(fut), fut.result

    def alone(self, job: Job) -> Outcome:
        return self.session.grade(job, final=True, retried=True)


class LocalExecutor:
    """Grade here: the sandbox host of this machine (or ``options.host_factory``'s), its own compile cache."""

    @contextmanager
    def session(self, setup: RunSetup) -> Iterator[LocalRun]:
        with ExitStack() as stack:
            compile_cache = None
            if setup.options.warm:  # filled by the warm-up, from the last identical run's when there is one
                compile_cache = cache_store.new_folder(setup.scratch)
                stack.callback(shutil.rmtree, compile_cache, True)
            session = stack.enter_context(GradingSession.open(setup.hide, setup.options,
                                                              compile_cache=compile_cache, entry=setup.entry))
            run = LocalRun(session)
            yield run
            run.cached_replies = session.cached_replies


def grade_jobs(todo: list[Job], run: Run, book: Gradebook, report, grader: str, progress: bool) -> None:
    """Grade ``todo`` with ``run`` (of an executor's session): prepare, a first pass, then each job whose
    first run met a measuring fault once more, alone, one at a time. Attempts are recorded in ``book``
    under ``grader`` (the grader's key) as they come back; a grader fault goes to ``report.faults``."""
    run.prepare(todo)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="nb", desc="grading", file=sys.stderr, dynamic_ncols=True)
    retry: list[Job] = []

    def finish(job: Job, outcome: Callable[[], Outcome]) -> None:
        try:
            result = outcome()
        except GraderError as exc:
            report.faults.append(f"{job.cand.rel}: grader fault: {exc}")
        else:
            if result.again:
                retry.append(job)
                return
            attempt = result.attempt
            if attempt.status is AttemptStatus.FAULT:
                report.faults.append(f"{job.cand.rel}: {attempt.reason}")
            else:
                if book.record(attempt, grader):
                    report.graded.append(attempt)
                book.set_current(attempt.student, attempt.exercise, attempt.key, job.ignored)
                if result.timing:
                    report.timings.append(result.timing)
        if bar:
            bar.update(1)

    for job, outcome in run.first_pass(todo):
        finish(job, outcome)
    # Second runs, one at a time, with nothing else running.
    for job in retry:
        report.retried.append(job.cand.rel)
        finish(job, lambda job=job: run.alone(job))
    if bar:
        bar.close()
