"""Fixtures for the sandbox tests: real GradingHosts (real processes, namespaces and cgroups).

Starting a host costs one template start (torch imported once, a few seconds), so one
host per test process is shared (session scope) where a test does not need its own limits. Tests that need
root (namespaces, cgroups, uid changes) are skipped with the reason when not root.
"""

from __future__ import annotations

import pytest

from course_grader.sandbox import GradingHost

from sandbox_probes import PROBES, small_limits


@pytest.fixture(scope="session")
def host():
    with GradingHost(hide=[], compile_cache=None, limits=small_limits(), harness_source=PROBES) as h:
        yield h
