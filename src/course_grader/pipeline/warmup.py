"""The warm-up: each exercise's model answers graded before any student, on the session's own host.

That fills the compile cache the kernels then share read-only, makes the instructor's reference
measurements once (kept in the session's ``ReplyCache``), and proves the exercise's verdicts work:
a model answer short of full auto marks stops the run with a ``GraderError`` (the grader's fault,
not the students'). Grading happens inside ``host.warming()``, the only time the cache is writable.

An identical earlier run (same torch, grader code and exercises) keeps its warm-up in the machine's
store (``cache_store``): its compile cache is copied in and its replies reused, so the model answers
are not graded again. The exercises it lacks are warmed under the entry's exclusive lock and then
published, unless student code has already run on this host.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course_grader.errors import GraderError
from course_grader.exercise.model import Exercise
from course_grader.exercise.release import answered_notebook
from course_grader.intake.discover import Candidate
from course_grader.intake.load import Loaded
from course_grader.pipeline import cache_store
from course_grader.pipeline.replies import ReplyCache
from course_grader.pipeline.submission import Job
from course_grader.status import AttemptStatus, TestStatus

MIN_WARM_WORKERS = 2   # set-up, not grading: two exercises at a time even with --jobs 1 (no student code runs yet)


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


def warm_up(session, needed: list[Exercise], may_publish: bool = True) -> bool:
    """Make ``session`` (a ``GradingSession``) ready to grade ``needed``: its compile cache filled, the
    model answers proven, their replies in its cache. True when the store's entry already held all of it.
    Nothing happens when the session's options say ``warm=False``."""
    if not session.options.warm:
        return False
    needed = [ex for ex in needed if ex.tests]
    entry, folder, progress = session.entry, session.compile_cache, session.options.progress
    if entry is None or folder is None:
        if folder is not None:
            cache_store.seed_compiled_kernels(folder)
        _warm(session, needed)
        return False

    if reuse_entry(entry, needed, folder, session.cache):
        if progress:
            print(f"warm-up of {', '.join(ex.name for ex in needed)} reused from an identical earlier run "
                  f"(store key {entry.key})", file=sys.stderr)
        return True
    with entry.lock(exclusive=True):
        record = entry.record()
        if record is not None and entry.copy_into(folder):
            session.cache.absorb(record.get("replies") or [])
        else:
            record = None
        todo = _missing(record, needed)
        if todo:
            if record is None:   # a new store entry: start from the machine's compiled C++, not from nothing
                cache_store.seed_compiled_kernels(folder)
            _warm(session, todo)
            if may_publish:   # model answers only: no student code has run in this host yet
                done = {**((record or {}).get("exercises") or {}), **{ex.id: ex.sha256 for ex in todo}}
                entry.publish(folder, done, session.cache.dump())
        return not todo


def _warm(session, todo: list[Exercise]) -> None:
    """Grade each exercise's model answers inside ``host.warming()``; stop unless each gets full auto marks."""
    progress = session.options.progress

    def one(ex: Exercise) -> None:
        start = time.perf_counter()
        cand = Candidate(f"model answers of {ex.name}", ex.path, "instructor", ex.id)
        job = Job(cand, Loaded(cand, ex.sha256, answered_notebook(ex)), ex, "warm", [])
        # verdicts only: the feedback run never changes a score, and the questions the tests ask of the
        # model answers (the same compiles a student's notebook makes) are what fill the compile cache
        attempt = session.grade_one(job, feedback=False)
        if attempt is None or attempt.status is not AttemptStatus.GRADED or attempt.auto_score != ex.auto_points:
            detail = "; ".join(f"{t.test_id}: {t.status}{' - ' + t.message[:200] if t.message else ''}"
                               for t in (attempt.tests if attempt else []) if t.status is not TestStatus.PASSED)
            raise GraderError(f"the model answers of {ex.name} do not get full marks "
                              f"({attempt.auto_score if attempt else 0:g}/{ex.auto_points:g}; "
                              f"{attempt.reason if attempt else ''} {detail}); nothing was graded")
        if progress:
            print(f"compile cache warmed with the model answers of {ex.name} "
                  f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)

    todo = [ex for ex in todo if ex.tests]
    workers = max(1, min(len(todo), max(MIN_WARM_WORKERS, session.options.jobs)))
    with session.host.warming(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix="warm") as pool:
        for _ in pool.map(one, todo):   # re-raises the first failure
            pass
