"""uids.py: a uid block per grader instance, released by the kernel when its holder dies."""

from __future__ import annotations

import subprocess
import sys
import time

from course_grader.sandbox.uids import BLOCK_SIZE, UidLease


def test_two_leases_never_share_a_block():
    with UidLease() as a, UidLease() as b:
        assert a.block != b.block
        assert set(range(a.first, a.first + BLOCK_SIZE)).isdisjoint(range(b.first, b.first + BLOCK_SIZE))


def test_runs_in_one_block_get_distinct_uids_and_can_reuse_them():
    with UidLease() as lease:
        first, second = lease.acquire(), lease.acquire()
        assert first != second and {first, second} <= set(range(lease.first, lease.first + BLOCK_SIZE))
        lease.release(first)
        lease.release(first)  # twice is harmless
        taken = [lease.acquire() for _ in range(BLOCK_SIZE - 1)]
        assert len(set(taken)) == BLOCK_SIZE - 1 and second not in taken


def test_a_killed_holder_releases_its_block():
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom course_grader.sandbox.uids import UidLease\n"
         "lease = UidLease()\nprint(lease.block, flush=True)\ntime.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        held = int(holder.stdout.readline())
        with UidLease() as mine:
            assert mine.block != held
    finally:
        holder.kill()   # SIGKILL: no cleanup code runs
        holder.wait()
    leases = []
    try:
        deadline = time.monotonic() + 10
        while held not in [lease.block for lease in leases] and time.monotonic() < deadline:
            leases.append(UidLease())
        assert held in [lease.block for lease in leases]
    finally:
        for lease in leases:
            lease.close()


def test_stale_cgroups_are_told_by_the_lease_not_by_a_pid():
    """A grader in another PID namespace sees other pids: a live grader's run cgroup whose pid does not
    exist here must not be swept; a dead grader's must, whatever its pid reads as here."""
    import os

    from course_grader.sandbox.cgroups import is_stale
    from course_grader.sandbox.uids import block_is_leased

    holder = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom course_grader.sandbox.uids import UidLease\n"
         "lease = UidLease()\nprint(lease.block, flush=True)\ntime.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        live = int(holder.stdout.readline())
        assert block_is_leased(live)
        # pid 1 exists here, 4_000_000 does not: neither says anything about the other namespace's grader
        for pid in (1, 4_000_000):
            assert not is_stale(f"course-grader-{live}-{pid}-0", own_block=-1)
        with UidLease() as mine:
            assert not is_stale(f"course-grader-{mine.block}-{os.getpid()}-3", own_block=mine.block)
            earlier = f"course-grader-{mine.block}-{os.getpid() + 1}-3"   # left by a holder before us
            assert is_stale(earlier, own_block=mine.block)
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while block_is_leased(live) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert is_stale(f"course-grader-{live}-1-0", own_block=-1)      # its holder is dead: swept even if pid 1 exists
    assert not is_stale("course-grader-not-a-run", own_block=-1)
