"""Helpers shared by the sandbox tests (imported by name; fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from course_grader.sandbox import Limits
from course_grader.status import Confinement

PROBES = Path(__file__).parent / "files" / "probe_harness"



def _confinement() -> Confinement:
    from course_grader.sandbox.policy import confinement_mode

    return confinement_mode()


# Root confines a run under a leased uid; an ordinary user, in user namespaces (docs/sandbox.md).
# Tests marked so run both ways: tests/e2e/test_as_ordinary_user.py runs them as a created user.
needs_confinement = pytest.mark.skipif(_confinement() is Confinement.NONE,
                                       reason="not root, and user namespaces are off: runs cannot be confined")


def run_uids(host) -> set[int]:
    """The uids a run's own processes report: a leased one under root, the nested namespace's otherwise."""
    from course_grader.sandbox.confine import SANDBOX_UID

    return set(host.uid_block) if host.confinement is Confinement.ROOT else {SANDBOX_UID}


def runs_alive(host) -> list[int]:
    """Host pids of run processes still alive: under root, any process of the host's uids; in user
    namespaces (where a run's uid outside is ours), any descendant of the process's template."""
    import time

    from course_grader.sandbox.proctree import tree_pids

    def alive() -> list[int]:
        if host.confinement is Confinement.ROOT:
            return uids_alive(host.uid_block)
        return [pid for pid in tree_pids(host.template.proc.pid) if pid != host.template.proc.pid]

    deadline = time.monotonic() + 5   # a run's trusted reaper leaves just after it reports the exit
    while (left := alive()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def small_limits(**overrides) -> Limits:
    """Short CPU budgets so that a limit is reached quickly (every spinning test burns the whole
    budget); a generous wall backstop so that a loaded machine still reaches the CPU limit first.
    The cells these tests run besides the spinning ones use a few hundredths of a second: torch
    is already imported in the template."""
    values = dict(cpu_s_per_cell=1, cpu_s_total=30, wall_s_backstop=120.0)
    values.update(overrides)
    return Limits(**values)




def uids_alive(uids) -> list[int]:
    """Host pids of processes running under any of ``uids`` (read from the host's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
            except FileNotFoundError:
                pass
    return found


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found
