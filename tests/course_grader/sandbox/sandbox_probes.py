"""Helpers shared by the sandbox tests (imported by name; fixtures live in conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from course_grader.sandbox import Limits

PROBES = Path(__file__).parent / "files" / "probe_harness"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces, cgroups and uid changes need root")


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
