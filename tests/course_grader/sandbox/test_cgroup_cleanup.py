"""No run cgroup outlives its grader (root, where runs have cgroups: memory, pids, the unified tree).

Each case starts a grader in a process of its own, which opens a notebook kernel, prints the run's
cgroup directories and runs a cell that sleeps. The grader then ends the run itself, or is killed
with SIGKILL mid-cell, or crashes (SIGSEGV) mid-cell: either way, within a few seconds every one of
those directories is gone, and so is the grader's template (it ends the runs it started and removes
their cgroups when its grader's end of the control socket closes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox_probes import needs_confinement

pytestmark = [needs_confinement,
              pytest.mark.skipif(os.geteuid() != 0, reason="runs have no cgroup without root (no delegated cgroup)")]

GRADER = r'''
import json, os, signal, sys, threading, time
sys.path.insert(0, {probes_dir!r})
from course_grader.sandbox import GradingHost
from sandbox_probes import small_limits
how = sys.argv[1]
with GradingHost(hide=[], limits=small_limits(wall_s_backstop=600.0)) as host:
    with host.notebook_kernel() as kernel:
        assert kernel.run.cgroup is not None, "no run cgroup"
        print(json.dumps({{"dirs": kernel.run.cgroup.join_paths, "template": host.template.proc.pid,
                          "init": kernel.run.init_pid}}), flush=True)
        if how == "crash":
            threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGSEGV)).start()
        result = kernel.run_cell("import time\ntime.sleep(%d)" % (1 if how == "ends" else 300), "sleeping")
        assert result.status.value == "ok", result
print("closed", flush=True)
'''


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat", "rb") as f:          # a zombie of ours is gone too
        return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"


@pytest.mark.parametrize("how", ["ends", "sigkill", "crash"])
def test_no_run_cgroup_outlives_its_grader(how, tmp_path):
    script = tmp_path / "grader.py"
    script.write_text(GRADER.format(probes_dir=str(Path(__file__).parent)))
    grader = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        line = grader.stdout.readline()
        assert line, grader.stderr.read()[-3000:]
        started = json.loads(line)
        dirs = [Path(d) for d in started["dirs"]]
        names = {d.name for d in dirs}
        assert len(names) == 1 and len(dirs) >= 2, dirs   # one name, in each hierarchy the host offers
        assert all(d.is_dir() for d in dirs), dirs
        if how == "sigkill":
            time.sleep(1.0)                       # inside the sleeping cell
            grader.send_signal(signal.SIGKILL)
        grader.wait(timeout=120)
        if how == "ends":
            assert grader.returncode == 0 and grader.stdout.read() == "closed\n", grader.stderr.read()[-3000:]
        else:
            assert grader.returncode == {"sigkill": -signal.SIGKILL, "crash": -signal.SIGSEGV}[how], grader.returncode
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (any(d.exists() for d in dirs) or not _gone(started["template"])):
            time.sleep(0.1)
        assert [str(d) for d in dirs if d.exists()] == []
        assert _gone(started["init"]) and _gone(started["template"])
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()
