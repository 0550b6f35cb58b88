"""Grading on a Dask cluster: ``course grade run DIR --scheduler ADDRESS`` (or ``--cluster local:N``).

The client (``client.py``) stays what a local run is: it discovers, loads and checks
submissions, writes the gradebook, feedback and CSV. Only the grading of each submission
moves: it becomes a Dask task on a worker (``worker.py``), which holds its own sandbox host
and warm compile cache, and computes the verdicts in its own (trusted) process exactly as
a local run's threads do. See "Grading on a cluster" in docs/grading.md.

Nothing outside this package imports Dask: without those options, grading never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from course_grader.errors import WorkerSetupError

from .client import ClusterSession, DaskExecutor
from .worker import RunSpec

__all__ = ["ClusterSession", "DaskExecutor", "RunSpec", "WorkerSetupError", "local_cluster"]


@contextmanager
def local_cluster(n_workers: int, threads_per_worker: int = 1) -> Iterator[str]:
    """A ``distributed.LocalCluster`` of ``n_workers`` worker processes on this machine, for as long
    as the block lasts; yields its scheduler address."""
    import dask
    from distributed import LocalCluster

    # no statistical profiler in the workers: it samples every thread every 10 ms, and grading has no use for it
    with dask.config.set({"distributed.worker.profile.enabled": False}), \
            LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
                         dashboard_address=":0") as cluster:   # any free port: never a clash
        yield cluster.scheduler_address
