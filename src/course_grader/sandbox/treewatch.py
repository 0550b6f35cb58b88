"""Memory and process caps per run where there is no cgroup, enforced from outside the run.

An ordinary user has no cgroup of their own on many machines (cgroup v1, no systemd delegation:
``systemd-run --user --scope`` needs a user manager, which this one does not have). Without one,
``RLIMIT_AS`` caps each process and ``RLIMIT_NPROC`` the number of tasks, but not the run: two
processes of one run held 5.2 GB against its 4 GB. So the grader reads the run's whole process
tree, from its init down, every time it polls the run (``Run.request``, every 0.1 s):

* **memory**: the sum of each process's private memory (``Private_Clean + Private_Dirty + Swap``
  of ``/proc/PID/smaps_rollup``, psutil's ``uss`` and ``swap``) plus what the run's private tmpfs
  folders hold (``statvfs`` through ``/proc/INIT/root``). Pages a process still shares with the
  template (torch's imports, copied on write) are not the run's, as a memory cgroup would not
  charge them to it either;
* **tasks**: processes and their threads, init included, as the cgroup's ``pids.max`` counts.

The run is ended when either passes its limit; the fault names it (``memory``, ``pids``) as the
cgroup's counters would. Tasks are capped first by the reaper's task gate (``taskgate.py``), which sees
each new process or thread as it starts; the count here is a further line, and ``RLIMIT_NPROC``, set a
little above the limit (:data:`NPROC_MARGIN`), the last. ``RLIMIT_AS`` stays as the line that holds
memory between two polls. A process that appears and exits
between two polls is not seen; it cannot hold more than ``RLIMIT_AS`` meanwhile. A process the run
made not dumpable, whose ``smaps_rollup`` is closed to the grader, counts with its whole resident set.
Written by hand because no library watches a tree against a budget; psutil reads each process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from course_grader.sandbox.proctree import tree_pids

NPROC_MARGIN = 16      # RLIMIT_NPROC = the pids limit + this: the task gate refuses (and records) first


@dataclass(frozen=True)
class TreeUsage:
    tasks: int              # processes and threads of the run
    memory_bytes: int       # private memory of its processes + its private tmpfs contents


def tmpfs_bytes(init_pid: int, folders) -> int:
    """Bytes held by the run's private tmpfs ``folders``, seen through its init's root."""
    total = 0
    for folder in folders:
        try:
            st = os.statvfs(f"/proc/{init_pid}/root{folder}")
        except OSError:
            continue
        total += (st.f_blocks - st.f_bfree) * st.f_frsize
    return total


def _tree_sum(init_pid: int, pids: list[int], memory_of) -> tuple[int, int] | None:
    """(tasks, the sum of ``memory_of(process)``) over ``pids``; None when init is gone. A process that
    ends meanwhile is left out; one whose files are closed to the grader counts its tasks only."""
    tasks = memory = 0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                tasks += process.num_threads()
                memory += memory_of(process)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            if pid == init_pid:
                return None
        except psutil.AccessDenied:
            continue
    return tasks, memory


def _resident(process: psutil.Process) -> int:
    """The whole resident set, from ``statm``: cheap (``smaps_rollup`` of a process that maps torch takes
    20 to 50 ms). Without swap, it is at least the process's private memory: an upper bound of it."""
    return process.memory_info().rss


def _private(process: psutil.Process) -> int:
    """The process's own memory (unique set plus swap) from ``smaps_rollup``."""
    try:
        info = process.memory_full_info()
    except psutil.AccessDenied:
        # Not dumpable (the run's code can make its processes so: prctl, or exec of a file it may
        # not read), so smaps_rollup is closed to us. statm is not: count its whole resident set,
        # pages shared with the template included (more than the process's own, never less).
        return _resident(process)
    return info.uss + info.swap


def usage(init_pid: int, private_folders=(), memory_limit: int | None = None) -> TreeUsage | None:
    """What the run below ``init_pid`` (a host pid) holds now; None when its init is gone.

    With ``memory_limit``, on a host without swap, the cheap bound (each :func:`_resident` set) is returned
    when it is under the limit (it is then more than the run holds); only past it is each process's
    private memory read from ``smaps_rollup``."""
    pids = tree_pids(init_pid)
    tmpfs = None
    if memory_limit is not None and not psutil.swap_memory().total:
        bound = _tree_sum(init_pid, pids, _resident)
        if bound is None:
            return None
        tmpfs = tmpfs_bytes(init_pid, private_folders)
        if bound[1] + tmpfs <= memory_limit:
            return TreeUsage(bound[0], bound[1] + tmpfs)
    found = _tree_sum(init_pid, pids, _private)
    if found is None:
        return None
    tasks, memory = found
    return TreeUsage(tasks, memory + (tmpfs if tmpfs is not None else tmpfs_bytes(init_pid, private_folders)))
