"""The root conftest restores os.environ after every test module (``_environment_restored``).

Kernels inherit the worker's environment: without the restore, a module that started a Dask
LocalCluster (which sets OMP_NUM_THREADS=1 in its parent) changed how every later notebook
in that worker ran, and kept it from forking warm kernels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LEAKER = """
import os

def test_sets_a_variable_as_a_dask_cluster_does():
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["COURSE_ISOLATION_PROBE"] = "leaked"
"""

LATER = """
import os

def test_a_later_module_starts_from_the_sessions_environment():
    assert "COURSE_ISOLATION_PROBE" not in os.environ
    assert os.environ.get("OMP_NUM_THREADS") == os.environ["SAVED_OMP_NUM_THREADS"]
"""


def test_a_modules_environment_changes_do_not_reach_the_next_module(tmp_path):
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_a_leaker.py").write_text(LEAKER)
    (tmp_path / "test_b_later.py").write_text(LATER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(COURSE_WARM_KERNELS="0", SAVED_OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "unset"))
    if "OMP_NUM_THREADS" not in env:
        env["SAVED_OMP_NUM_THREADS"] = "unset"
        env["OMP_NUM_THREADS"] = "unset"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout
