"""The compile cache: written only while warming; every other run gets a private copy-on-write view."""

from __future__ import annotations

import pytest

from course_grader.sandbox import GradingHost
from course_grader.status import CellStatus

from sandbox_probes import needs_confinement, small_limits

pytestmark = needs_confinement

POISON = ("import os\n"
          "root = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
          "open(root + '/entry', 'w').write('poisoned')\n"
          "open(root + '/new-entry', 'w').write('x')\n"
          "os.makedirs(root + '/sub/deeper', exist_ok=True)\n"
          "print(open(root + '/entry').read())")


@pytest.fixture(scope="module")
def cache(tmp_path_factory, seed_compiled_kernels):
    folder = seed_compiled_kernels(tmp_path_factory.mktemp("compile-cache"))  # C++ only: every graph misses
    (folder / "entry").write_text("good")
    (folder / "entry").chmod(0o666)
    return folder


@pytest.fixture(scope="module")
def host(cache):
    with GradingHost(hide=[], compile_cache=cache, limits=small_limits(cpu_s_per_cell=300)) as h:
        yield h


def test_a_normal_run_cannot_change_the_cache(host, cache):
    for _ in range(2):  # the second run sees the cache as it was, not the first run's writes
        with host.notebook_kernel() as kernel:
            assert kernel.run_cell("import os; print(open(os.environ['TORCHINDUCTOR_CACHE_DIR'] + '/entry').read())"
                                   ).output == "good\n"
            result = kernel.run_cell(POISON)
            assert result.status is CellStatus.OK and result.output == "poisoned\n"   # its own view only
    assert (cache / "entry").read_text() == "good"
    assert not (cache / "new-entry").exists() and not (cache / "sub").exists()


def test_warming_runs_write_the_cache_for_later_runs(host, cache):
    warm = ("import os\nroot = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
            "os.makedirs(root + '/warm/deeper')\nopen(root + '/warm/entry', 'w').write('w')")
    with host.warming():
        with host.notebook_kernel() as kernel:
            assert kernel.run_cell(warm).status is CellStatus.OK
    assert (cache / "warm" / "entry").read_text() == "w" and (cache / "warm" / "deeper").is_dir()
    with host.notebook_kernel() as kernel:     # a later run (another uid) may still add to its own view
        result = kernel.run_cell("import os\nroot = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
                                 "open(root + '/warm/deeper/x', 'w').write('y')\n"
                                 "print(os.listdir(root + '/warm/deeper'))")
        assert result.output == "['x']\n", result
    assert not (cache / "warm" / "deeper" / "x").exists()


def test_warm_cache_spares_the_students_inductor_compile(host):
    code = ("import glob, torch\n"
            "from torch._dynamo.utils import counters\n"
            "@torch.compile\n"
            "def f(x):\n"
            "    return torch.cos(x) * 3 - 1\n"
            "f(torch.ones(4))\n"
            "print(sorted(counters['inductor'].items()))\n"
            # inductor's precompiled header goes to /tmp (private to the run) whatever the cache dir:
            # built there, it would cost every run that loads a kernel ~7 s and 158 MB
            "print('headers:', glob.glob('/tmp/torchinductor_*/precompiled_headers/*'))")
    with host.warming(), host.notebook_kernel() as kernel:
        result = kernel.run_cell(code)
        output = result.output + str(result.error)
        assert "('fxgraph_cache_miss', 1)" in output and "headers: []" in output, output
    with host.notebook_kernel() as kernel:
        output = kernel.run_cell(code).output
        assert "('fxgraph_cache_hit', 1)" in output and "headers: []" in output, output


def test_only_the_grader_can_enter_the_cache_on_the_host(host, cache):
    assert cache.stat().st_mode & 0o777 == 0o700
    with host.warming(), host.notebook_kernel() as kernel:
        assert kernel.run_cell("print(1)").output == "1\n"
    assert cache.stat().st_mode & 0o777 == 0o700
