"""CPU time of a run's process tree, read from ``/proc`` (for runs without a cgroup).

A run's processes all descend from its init (PID 1 of its namespace). Their CPU time is the
sum, over the live processes of that tree, of ``utime + stime`` (every thread) plus
``cutime + cstime`` (children they have already waited for; init waits for every orphan, so a
process that died inside the run is still counted once it is reaped). Read from the host's
``/proc``, where the tree's pids are the host's. A process that exits between two reads can
make a reading lag for a moment; it never makes it run ahead.

Written by hand, not with psutil (which ``treewatch`` uses for each process's memory): psutil's
``children(recursive=True)`` reads the ``stat`` of every process on the host to find a tree (0.23 s
for 181 processes on the loaded 2-core machine), too slow for a watch read every 0.1 s; this reads
only the tree, through each thread's ``/proc/PID/task/TID/children``.
"""

from __future__ import annotations

import os

TICKS = os.sysconf("SC_CLK_TCK")
MAX_PROCESSES = 4096
FIRST_FIELD = 3    # /proc/PID/stat numbers its fields from 1; the state, after "(comm)", is field 3
UTIME, STARTTIME = 14, 22   # utime, stime, cutime, cstime are fields 14-17; starttime is field 22


def stat_field(fields: list[bytes], number: int) -> bytes:
    """Field ``number`` (as proc(5) numbers them) of a :func:`stat_fields` list."""
    return fields[number - FIRST_FIELD]


def stat_fields(pid: int) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` from the state on: the command name before them, in
    parentheses, may itself hold spaces and ")". Raises ``OSError`` when there is no such process."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()


def _stat_ticks(pid: int) -> int:
    fields = stat_fields(pid)
    return sum(int(stat_field(fields, n)) for n in range(UTIME, UTIME + 4))


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
