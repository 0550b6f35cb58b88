"""The worker's side of cluster grading: one ``GradingHost`` per Dask worker process.

A task is :func:`grade_task`: it grades one submission with ``GradingSession.grade``, exactly
as a thread of a local run does, and returns its ``Outcome``. The session (its sandbox host)
is opened on the first task of a run in this process, not at worker start, and is kept for the
run's later tasks (``RunSpec.key``): its template, its uid lease and its compile cache in a
private folder of this machine. The client sends each worker a :func:`prepare_task` first,
which warms the session up with the model answers of every exercise of the run
(``GradingSession.warm_up``); a worker that joins later warms an
exercise before its first submission of it. Warming waits until no submission is being graded
in this process and holds off new ones, so that no student run ever sees the cache writable.

The verdicts run in this process, the worker's, which never runs student code: the host
forks every student run from its template, confined as in local grading. Nothing is recorded
here; the client writes the gradebook.

Not here: resilience. When this process dies, the scheduler gives its task to another worker
and the host dies with it (the template exits when its control socket closes).
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from course_grader.errors import WorkerSetupError
from course_grader.pipeline import cache_store

PLUGIN_NAME = "course-grader-hosts"


class _Closed(Exception):
    """The host was released between finding it and using it: find the run's host again."""


@dataclass(frozen=True)
class RunSpec:
    """What a worker needs to set up a host the way ``grade_class`` would (sent with every task)."""

    hide: tuple[str, ...]            # the client's instructor paths; the worker adds its own
    limits: object                   # sandbox ``Limits``, or None for its defaults
    warm: bool
    progress: bool
    grader_key: str                  # the client's; a worker with other grader code refuses to grade
    runtime: str                     # the client's Python and torch (``runtime()``); a worker must match
    host_factory: object = None      # None: the sandbox's GradingHost (tests pass a fake)
    verdict_for: object = None       # None: the exercise's test cells (course_grader.verdict.testcells)
    unconfined: bool = False         # --unconfined: a worker that is not root grades anyway
    exercise_hashes: tuple = ()      # ((id, sha256), ...) of every exercise: the stored compile cache's key
    key: str = field(default="", compare=False)

    def with_key(self) -> RunSpec:
        import cloudpickle

        digest = hashlib.sha256(cloudpickle.dumps((self.hide, self.limits, self.warm, self.grader_key, self.runtime,
                                                   self.host_factory, self.verdict_for, self.unconfined,
                                                   self.exercise_hashes))).hexdigest()
        return RunSpec(self.hide, self.limits, self.warm, self.progress, self.grader_key, self.runtime,
                       self.host_factory, self.verdict_for, self.unconfined, self.exercise_hashes, digest[:16])


def runtime() -> str:
    """The Python and torch versions that grade: the same on the client and every worker."""
    from importlib.metadata import version

    return f"Python {platform.python_version()}, torch {version('torch')}"


class _HostState:
    """The grading session of one run in this process, the exercises warmed in it, and who is using it."""

    def __init__(self, spec: RunSpec):
        from course_grader.config import GradeOptions

        from ..session import GradingSession

        self.spec = spec
        self.stack = ExitStack()
        self.cond = threading.Condition()
        self.active: dict[int, str] = {}          # thread id -> submission being graded
        self.warming = False
        self.warmed: dict[tuple[str, str], str] = {}   # (exercise id, sha) -> "" or the warm-up failure
        self.warm_s = 0.0
        self.closing = self.closed = False
        self.students_seen = False                # once True, this host's cache is never published
        self.cache_reused = False
        try:
            # 0700, inside the Dask worker's own folder when there is one: Dask deletes that folder
            # when the worker closes, and purges it on the next start if the worker was killed
            worker_dir = _worker_folder()
            scratch = Path(tempfile.mkdtemp(prefix="course-grader-", dir=worker_dir))
            self.stack.callback(shutil.rmtree, scratch, True)
            compile_cache = cache_store.new_folder(scratch) if spec.warm else None
            # this machine's stored warm-up, as grade_class does (never for test doubles)
            entry = None
            if spec.warm and spec.exercise_hashes and spec.host_factory is None and spec.verdict_for is None:
                entry, _ = cache_store.open_entry(dict(spec.exercise_hashes), spec.grader_key)
            hide = [Path(p) for p in spec.hide] + [scratch] + ([Path(worker_dir)] if worker_dir else [])
            # one warm-up thread pair, as a local --jobs 1 run; the worker's threads grade its tasks
            options = GradeOptions(jobs=1, limits=spec.limits, progress=spec.progress, warm=spec.warm,
                                   host_factory=spec.host_factory, verdict_for=spec.verdict_for,
                                   unconfined=spec.unconfined)
            self.session = self.stack.enter_context(GradingSession.open(hide, options, compile_cache=compile_cache,
                                                                        entry=entry))
        except BaseException:
            self.stack.close()
            raise

    def warm(self, exercises) -> None:
        """Grade, with the host to itself, the model answers of each of ``exercises`` not warmed here
        yet (two at a time, as ``grade_class`` does). Raises ``WorkerSetupError`` if one fails."""
        if not self.spec.warm:
            return
        with self.cond:
            while True:
                if self.closing:
                    raise _Closed
                todo = [ex for ex in exercises if ex.tests and (ex.id, ex.sha256) not in self.warmed]
                if not todo or not (self.warming or self.active):
                    break
                self.cond.wait()    # warming needs the host to itself: no student run may see the cache writable
            if todo:
                self.warming = True
        if todo:
            self._warm(todo)
        failed = [self.warmed[(ex.id, ex.sha256)] for ex in exercises if self.warmed.get((ex.id, ex.sha256))]
        if failed:
            raise WorkerSetupError(failed[0])

    @contextmanager
    def grading(self, job):
        """Hold the host for one submission, its exercise warmed first."""
        self.warm([job.ex])
        with self.cond:
            while self.warming:
                self.cond.wait()
            if self.closing:
                raise _Closed
            self.active[threading.get_ident()] = job.cand.rel
            self.students_seen = True
        try:
            yield
        finally:
            with self.cond:
                del self.active[threading.get_ident()]
                self.cond.notify_all()
            self._close_if_released()

    def _warm(self, todo) -> None:
        from course_grader.errors import GraderError

        start = time.perf_counter()
        failure = ""
        try:
            # published only while no student code has run in this host (as grade_class does)
            reused = self.session.warm_up(todo, may_publish=not self.students_seen)
            self.cache_reused = reused if not self.warmed else self.cache_reused and reused
        except GraderError as exc:
            failure = str(exc)
        except Exception as exc:  # noqa: BLE001 - the worker's sandbox failed before any student ran
            failure = f"warming the compile cache failed: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            with self.cond:
                self.warm_s += time.perf_counter() - start
                for ex in todo:
                    self.warmed[(ex.id, ex.sha256)] = failure
                self.warming = False
                self.cond.notify_all()
            self._close_if_released()

    def close_when_idle(self) -> None:
        with self.cond:
            self.closing = True
        self._close_if_released()

    def _close_if_released(self) -> None:
        with self.cond:
            done = self.closing and not self.active and not self.warming and not self.closed
            self.closed = self.closed or done
        if done:
            self.stack.close()


_HOSTS: dict[str, _HostState] = {}
_LOCK = threading.Lock()


def _worker_folder() -> str | None:
    """This Dask worker's own scratch folder (no student run needs to see it); None outside a worker."""
    try:
        from distributed import get_worker

        return get_worker().local_directory
    except ValueError:
        return None


def _host_for(spec: RunSpec) -> _HostState:
    from course_grader import grader_key

    if spec.grader_key != grader_key():
        raise WorkerSetupError(f"this worker runs other grader code (grader key {grader_key()}, the client's "
                               f"{spec.grader_key}): install the client's commit on every worker")
    if spec.runtime != runtime():
        raise WorkerSetupError(f"this worker has {runtime()}, the client {spec.runtime}: install the pinned "
                               "requirements on every worker")
    if spec.host_factory is None:   # as grade_class does locally
        from course_grader.sandbox.policy import confinement_refusal

        if refusal := confinement_refusal("this worker", spec.unconfined):
            raise WorkerSetupError(refusal)
    with _LOCK:
        state = _HOSTS.get(spec.key)
        if state is None:
            # one run at a time per process: a host left by an earlier run (a killed client) goes
            for old in list(_HOSTS):
                _HOSTS.pop(old).close_when_idle()
            try:
                state = _HOSTS[spec.key] = _HostState(spec)
            except Exception as exc:  # noqa: BLE001 - the sandbox of this worker does not start
                raise WorkerSetupError(f"the sandbox did not start on this worker: {type(exc).__name__}: "
                                       f"{str(exc)[:300]}") from None
        return state


def grade_task(spec: RunSpec, job, final: bool):
    """One submission on this worker: its ``Outcome`` (``final``: a second run, alone)."""
    while True:
        state = _host_for(spec)
        try:
            with state.grading(job):
                return state.session.grade(job, final=final, retried=final)
        except _Closed:
            continue


def prepare_task(spec: RunSpec, exercises: list) -> float:
    """Start this worker's host for the run and warm it with the model answers of ``exercises``,
    before its first submission (as ``grade_class`` warms before grading). Returns the warm-up s."""
    while True:
        state = _host_for(spec)
        try:
            state.warm(exercises)
            return state.warm_s
        except _Closed:
            continue


def run_stats(key: str) -> dict:
    """``{"warm_s", "cached_replies", "grading"}`` of run ``key`` in this process (for ``Client.run``)."""
    state = _HOSTS.get(key)
    if state is None:
        return {"warm_s": 0.0, "cached_replies": 0, "grading": [], "notices": [], "cache_reused": False}
    with state.cond:
        grading = [] if state.warming else sorted(state.active.values())
    return {"warm_s": state.warm_s, "cached_replies": state.session.cached_replies, "grading": grading,
            "notices": state.session.notices, "cache_reused": state.cache_reused}


def grading_now() -> list[str]:
    """Submissions being graded in this process right now, warm-ups excluded (for ``Client.run``)."""
    return sorted(rel for key in list(_HOSTS) for rel in run_stats(key)["grading"])


def release(key: str | None = None) -> int:
    """Close run ``key``'s host in this process (every host when None) once its tasks end."""
    with _LOCK:
        keys = [k for k in _HOSTS if key is None or k == key]
        states = [_HOSTS.pop(k) for k in keys]
    for state in states:
        state.close_when_idle()
    return len(states)


class HostsPlugin(WorkerPlugin):
    """Closes this worker's grading hosts when the worker closes."""

    name = PLUGIN_NAME

    def teardown(self, worker) -> None:
        release()
