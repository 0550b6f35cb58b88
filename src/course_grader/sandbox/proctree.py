"""CPU time of a run's process tree, read from ``/proc`` (for runs without a cgroup).

A run's processes all descend from its init (PID 1 of its namespace). Their CPU time is the
sum, over the live processes of that tree, of ``utime + stime`` (every thread) plus
``cutime + cstime`` (children they have already waited for; init waits for every orphan, so a
process that died inside the run is still counted once it is reaped). Read from the host's
``/proc``, where the tree's pids are the host's. A process that exits between two reads can
make a reading lag for a moment; it never makes it run ahead.
"""

from __future__ import annotations

import os

TICKS = os.sysconf("SC_CLK_TCK")
STAT_UTIME = 13   # fields of /proc/PID/stat after the ")" that ends the command name, counted from 0 at state
MAX_PROCESSES = 4096


def _stat_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    # fields[0] is the state; utime, stime, cutime, cstime are fields 14-17 of the whole line
    return sum(int(x) for x in fields[STAT_UTIME - 2:STAT_UTIME + 2])


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        pass
    return kids


def tree_pids(root_pid: int) -> list[int]:
    """``root_pid`` and every live descendant of it."""
    found, todo = [], [root_pid]
    while todo and len(found) < MAX_PROCESSES:
        pid = todo.pop()
        if pid in found or not os.path.exists(f"/proc/{pid}"):
            continue
        found.append(pid)
        todo += _children(pid)
    return found


def tree_cpu_s(root_pid: int) -> float | None:
    """CPU seconds used by ``root_pid`` and all its descendants (None when it is gone)."""
    total, todo, seen = 0, [root_pid], set()
    while todo and len(seen) < MAX_PROCESSES:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            total += _stat_ticks(pid)
        except (FileNotFoundError, ProcessLookupError):
            if pid == root_pid:
                return None
            continue
        todo += _children(pid)
    return total / TICKS
