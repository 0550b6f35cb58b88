"""The client's side of cluster grading: submit each submission as a Dask task, take attempts back.

``DaskExecutor(address)`` is an executor (``pipeline.schedule.Executor``): ``grade_class(..., executor=...)``
uses its ``session(setup)`` in place of the local one. Its ``prepare`` sends every worker a
:func:`worker.prepare_task` (start its host, warm it with the run's exercises); ``first_pass`` submits one
:func:`worker.grade_task` per submission and yields the results as they complete
(``distributed.as_completed``) to ``schedule.grade_jobs``, which records them in this process's gradebook. A
second run (a measuring timeout or a dead child in the first) is submitted alone, after every first run has
finished, as in local grading.

What happens when things die:

* a worker dies mid-task: the scheduler hands the task to another worker; nothing of the dead
  run reached the gradebook, since only a finished task's result is ever recorded, and the new
  run is a first run like any other (the lost one is not a "try"). A task that has killed
  ``distributed.scheduler.allowed-failures`` workers (default 3) ends as ``KilledWorker``: a
  grader fault for that submission, never recorded, graded again by the next run;
* this process dies: the gradebook holds every attempt recorded so far (one transaction each),
  and the next run skips them by attempt key, as a local run does;
* a worker cannot set up (``WorkerSetupError``): the run stops with ``GraderError``;
* every worker is gone (killed, or its machine down) and none joins for ``NO_WORKERS_S``: the run
  stops with ``GraderError`` naming how many submissions are left, rather than wait forever for a
  task no one runs (Dask keeps such tasks queued); what was recorded stays, the next run grades the rest.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from distributed import Client
from distributed.client import FutureCancelledError, FuturesCancelledError, _wait

from .worker import (
    PLUGIN_NAME,
    HostsPlugin,
    RunSpec,
    WorkerSetupError,
    grade_task,
    prepare_task,
    release,
    run_stats,
    runtime,
)

CONNECT_TIMEOUT_S = 60
NO_WORKERS_S = 120          # a cluster without any worker this long stops the run (a worker restarts in seconds)
WATCH_S = 5.0               # how often a run waiting on its tasks looks whether the cluster still has workers
PREPARE_PRIORITY = 100      # a worker warms up before it grades (Dask runs higher priorities first)


def _killed_worker_type():
    from distributed.scheduler import KilledWorker

    return KilledWorker


class ClusterSession:
    """One grading run on a cluster: ``prepare``, ``first_pass``, ``alone``, then the workers' warm-up figures."""

    def __init__(self, client: Client, spec: RunSpec):
        self.client, self.spec = client, spec
        self.prepared: list = []                  # kept until the first pass ends: a released future is cancelled
        self.warm_s = 0.0
        self.cached_replies = 0
        self.sandbox_notices: list[str] = []      # what a worker's sandbox could not set up, by worker
        self.cache_reused = False                 # every worker started from its machine's stored warm-up

    def _key(self, job, final: bool) -> str:
        # deterministic: a task already queued for the same run and submission is reused, never doubled
        return f"course-grade-{self.spec.key}-{job.key[:24]}-{'alone' if final else 'first'}"

    def prepare(self, todo) -> None:
        """One ``prepare_task`` per worker now in the cluster, ahead of any submission: each starts its
        host and warms it with every exercise of the run, two at a time, as a local run does."""
        exercises = list({job.ex.id: job.ex for job in todo}.values())
        self.prepared = [self.client.submit(prepare_task, self.spec, exercises, workers=[address],
                                            allow_other_workers=False, priority=PREPARE_PRIORITY,
                                            key=f"course-prepare-{self.spec.key}-{n}-{address}")
                         for n, address in enumerate(sorted(self.client.nthreads()))]

    def first_pass(self, todo) -> Iterator[tuple[object, object]]:
        futures = {self.client.submit(grade_task, self.spec, job, False, key=self._key(job, False)): job
                   for job in todo}
        try:
            for fut in self._as_completed(list(futures)):
                job = futures.pop(fut)
                self._stop_on_setup_error(fut)
                yield job, self._outcome(fut)
        finally:
            for fut in [*futures, *self.prepared]:      # grading futures are left only when the run stops early
                fut.cancel()
            self.prepared = []

    def _as_completed(self, futures: list) -> Iterator:
        """``futures`` as they finish; ``GraderError`` once the cluster has had no worker for NO_WORKERS_S."""
        from course_grader.errors import GraderError

        pending, alone_since = list(futures), None
        while pending:
            try:
                # distributed.wait on this session's client (``wait`` itself takes the default one, and this
                # client is deliberately not the default: a grader may run beside the user's own)
                self.client.sync(_wait, pending, timeout=WATCH_S, return_when="FIRST_COMPLETED")
            except (TimeoutError, FuturesCancelledError):   # a cancelled task is its submission's outcome
                pass
            done = [f for f in pending if f.status != "pending"]
            if done:
                pending = [f for f in pending if f.status == "pending"]
                yield from done
                continue
            if self.client.nthreads():
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since >= NO_WORKERS_S:
                raise GraderError(f"the cluster has had no worker for {NO_WORKERS_S} s: {len(pending)} submission(s) "
                                  "not graded; start its workers and run the same command again (what was graded "
                                  "is kept)")

    def alone(self, job):
        fut = self.client.submit(grade_task, self.spec, job, True, key=self._key(job, True))
        for _ in self._as_completed([fut]):
            pass
        self._stop_on_setup_error(fut)
        return self._outcome(fut)()

    def _stop_on_setup_error(self, fut) -> None:
        from course_grader.errors import GraderError

        try:
            error = fut.exception()      # waits for the task; None when it succeeded
        except Exception:  # noqa: BLE001 - cancelled or lost: ``_outcome`` reports it for this submission
            return
        if isinstance(error, WorkerSetupError):
            raise GraderError(f"a worker cannot grade: {error}")

    def _outcome(self, fut):
        def result():
            from course_grader.errors import GraderError

            try:
                return fut.result()
            except GraderError:
                raise
            except _killed_worker_type() as exc:
                raise GraderError(f"the workers grading it died ({exc}); graded again by the next run") from None
            except FutureCancelledError as exc:
                raise GraderError(f"the cluster dropped the task ({exc}); graded again by the next run") from None
            except Exception as exc:  # noqa: BLE001 - anything else from the cluster is the grader's fault
                raise GraderError(f"{type(exc).__name__} on the cluster: {str(exc)[:300]}") from None
            finally:
                fut.release()

        return result

    def finish(self) -> None:
        """Collect the workers' warm-up figures and close this run's hosts on them."""
        for fut in self.prepared:      # a run stopped before its first pass
            fut.cancel()
        try:
            stats = self.client.run(run_stats, self.spec.key)
            self.warm_s = max((s["warm_s"] for s in stats.values()), default=0.0)
            self.cached_replies = sum(s["cached_replies"] for s in stats.values())
            self.sandbox_notices = [f"worker {addr}: {n}" for addr, s in sorted(stats.items()) for n in s["notices"]]
            self.cache_reused = bool(stats) and all(s["cache_reused"] for s in stats.values())
            self.client.run(release, self.spec.key)
        except Exception as exc:  # noqa: BLE001 - the grades are recorded; an unreachable worker closes its own
            print(f"cluster: could not release the workers' hosts ({type(exc).__name__}: {exc})", file=sys.stderr)


class DaskExecutor:
    """Grade on the Dask cluster whose scheduler is at ``address`` (``tcp://host:8786``)."""

    def __init__(self, address: str):
        self.address = address

    @contextmanager
    def session(self, setup) -> Iterator[ClusterSession]:
        """A run of ``setup`` (``schedule.RunSetup``: its hidden folders, options and exercise hashes;
        each worker keeps its own compile cache and stored warm-up)."""
        from course_grader import grader_key
        from course_grader.errors import GraderError

        from ..session import default_host
        from ..verdicts import verdict_module

        options = setup.options
        spec = RunSpec(tuple(str(p) for p in setup.hide), options.limits, options.warm, options.progress,
                       grader_key(), runtime(),
                       None if options.host_factory in (None, default_host) else options.host_factory,
                       None if options.verdict_for in (None, verdict_module) else options.verdict_for,
                       options.unconfined, tuple(sorted(setup.exercise_hashes.items()))).with_key()
        try:
            client = Client(self.address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except OSError as exc:
            raise GraderError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        session = ClusterSession(client, spec)
        try:
            client.register_plugin(HostsPlugin(), name=PLUGIN_NAME)
            yield session
        finally:
            session.finish()
            client.close()
