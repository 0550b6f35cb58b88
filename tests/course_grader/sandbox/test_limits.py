"""Limits end a run with the fault that names the student's cell; the grader's faults are told apart."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from course_grader.errors import SandboxFault
from course_grader.status import CellStatus, FaultKind
from course_grader.wire import protocol

from sandbox_probes import needs_confinement, runs_alive, small_limits

pytestmark = needs_confinement


def test_cpu_loop_is_a_cpu_time_fault_naming_the_cell(host):
    with host.notebook_kernel() as kernel:
        kernel.run_cell("x = 1", "ex01-setup")
        result = kernel.run_cell("while True:\n    x += 1", "ex01-rewrite")
        assert result.status is CellStatus.TIMEOUT and result.fault is FaultKind.CPU_TIME
        assert result.error == "1 s of CPU in cell ex01-rewrite"
        # the detail adds the figure and the place to the fault's one wording, and repeats nothing of it
        assert f"your code {result.fault.wording}: {result.error}" == \
            "your code used up its CPU time: 1 s of CPU in cell ex01-rewrite"
        assert result.cpu_s >= 1
        after = kernel.run_cell("print(x)", "ex01-check")
        assert after.status is CellStatus.NOT_RUN
    assert runs_alive(host) == []


def test_cpu_in_threads_and_subprocesses_counts_too(host):
    code = ("import subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'while True: pass'])")
    with host.notebook_kernel() as kernel:
        result = kernel.run_cell(code, "spawner")
    assert result.fault is FaultKind.CPU_TIME and "cell spawner" in result.error


def test_sleeping_code_hits_the_wall_clock_backstop(host):
    with host.notebook_kernel(small_limits(wall_s_backstop=2.0)) as kernel:
        result = kernel.run_cell("import time\ntime.sleep(60)", "sleepy")
    assert result.status is CellStatus.TIMEOUT and result.fault is FaultKind.WALL_TIME
    assert "sleepy" in result.error and "almost without using CPU" in result.error


def test_cells_that_each_wait_under_the_backstop_are_ended_by_the_whole_run_limit(host):
    # each cell waits 1.5 s, under its 20 s backstop; the whole run may take 4 s
    with host.notebook_kernel(small_limits(wall_s_backstop=20.0, wall_s_per_run=4.0)) as kernel:
        results = [kernel.run_cell("import time\ntime.sleep(1.5)", f"wait-{i}") for i in range(5)]
    statuses = [r.status for r in results]
    assert statuses[0] is CellStatus.OK
    ended = next(r for r in results if r.status is CellStatus.TIMEOUT)
    assert ended.fault is FaultKind.WALL_TIME and "whole run" in ended.error, ended
    assert statuses[-1] is CellStatus.NOT_RUN


def test_busy_code_is_not_stopped_by_the_wall_clock_backstop(host):
    # 2 s of CPU take longer than the 1 s backstop on any machine; a loaded one only stretches it
    with host.notebook_kernel(small_limits(cpu_s_per_cell=30, wall_s_backstop=1.0)) as kernel:
        result = kernel.run_cell("import time\nt = time.process_time()\nwhile time.process_time() - t < 2:\n    pass\n"
                                 "print('done')", "busy")
    assert result.status is CellStatus.OK and result.output == "done\n", result


def test_memory_cap_gives_a_memory_fault(host):
    if not host.plan.memory:
        pytest.skip("no memory cgroup on this host")
    with host.notebook_kernel(small_limits(memory_bytes=256 << 20)) as kernel:
        assert kernel.run_cell("small = bytearray(16 << 20)").status is CellStatus.OK
        result = kernel.run_cell("big = bytearray(1 << 30)", "hog")
    assert result.status is CellStatus.DIED and result.fault is FaultKind.MEMORY
    assert result.error == "more than 256 MB of memory in cell hog"


def test_fork_bomb_is_a_pids_fault_in_every_mode(host):
    """Root: the pids cgroup refuses the fork and counts it. No pids cgroup (an ordinary user): the
    run's reaper answers every fork (its task gate, a seccomp user notification), refuses the one past
    the limit and reports it, so even a bomb that rises and falls between two reads of the grader's
    watch is recorded (before the gate, 2 bombs in 6 were refused by RLIMIT_NPROC unrecorded)."""
    with host.notebook_kernel(small_limits(pids=24, cpu_s_per_cell=10)) as kernel:
        result = kernel.run_cell("import os\nwhile True:\n    os.fork()", "bomb")
        assert kernel.run.gated is (host.plan.pids is None)
    assert result.fault is FaultKind.PIDS, result
    assert result.error == "more than 24 processes or threads at once in cell bomb"
    assert runs_alive(host) == []


def test_without_a_pids_cgroup_the_task_gate_caps_a_root_run_too(host):
    """The gate does not depend on user namespaces: a root host without a pids cgroup uses it as well."""
    if host.plan.pids is None:
        pytest.skip("no pids cgroup here: the test above already runs through the gate")
    saved = host.plan
    host.plan = dataclasses.replace(saved, pids=None)
    try:
        with host.notebook_kernel(small_limits(pids=24, cpu_s_per_cell=10)) as kernel:
            assert kernel.run.gated
            assert kernel.run_cell("import os\nos.waitpid(os.fork() or os._exit(0), 0)", "one").status is CellStatus.OK
            result = kernel.run_cell("import os\nwhile True:\n    os.fork()", "bomb")
    finally:
        host.plan = saved
    assert result.fault is FaultKind.PIDS, result
    assert result.error == "more than 24 processes or threads at once in cell bomb"
    assert runs_alive(host) == []


def test_too_many_threads_are_a_pids_fault_in_every_mode(host):
    with host.notebook_kernel(small_limits(pids=24, cpu_s_per_cell=10)) as kernel:
        result = kernel.run_cell("import threading, time\n"
                                 "ts = [threading.Thread(target=time.sleep, args=(3,)) for _ in range(100)]\n"
                                 "for t in ts: t.start()", "threads")
    assert result.fault is FaultKind.PIDS and "cell threads" in result.error, result


def test_two_processes_together_past_the_memory_limit_are_a_memory_fault(host):
    """Per run, not per process: each process holds 300 MB (under the 512 MB limit and its own
    RLIMIT_AS), both together 600 MB. A memory cgroup, or the grader's watch of the process tree."""
    code = ("import os, time\n"
            "pid = os.fork()\n"
            "held = b'x' * (300 << 20)\n"       # written, so resident (a bytearray of zeros is not)
            "time.sleep(60)")
    with host.notebook_kernel(small_limits(memory_bytes=512 << 20, cpu_s_per_cell=20,
                                           wall_s_backstop=240.0)) as kernel:
        result = kernel.run_cell(code, "two-hogs")
    assert result.status is CellStatus.DIED and result.fault is FaultKind.MEMORY, result
    assert result.error == "more than 512 MB of memory in cell two-hogs"
    assert runs_alive(host) == []


def test_processes_made_not_dumpable_still_count_toward_the_memory_limit(host):
    """A process that is not dumpable closes its smaps_rollup to the grader (same uid outside in user
    namespaces): without a cgroup its resident set still counts, so two such hogs are a memory fault."""
    code = ("import ctypes, os, time\n"
            "pid = os.fork()\n"
            "ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)\n"   # PR_SET_DUMPABLE, 0
            "held = b'x' * (300 << 20)\n"
            "time.sleep(60)")
    with host.notebook_kernel(small_limits(memory_bytes=512 << 20, cpu_s_per_cell=20,
                                           wall_s_backstop=240.0)) as kernel:
        result = kernel.run_cell(code, "hidden-hogs")
    assert result.status is CellStatus.DIED and result.fault is FaultKind.MEMORY, result
    assert runs_alive(host) == []


def test_files_in_the_private_tmp_count_toward_the_memory_limit(host):
    """A private /tmp is memory (tmpfs): 3 files of 200 MB there pass a 512 MB run limit."""
    code = ("import time\n"
            "for i in range(3):\n"
            "    with open(f'/tmp/fill-{i}', 'wb') as f:\n"
            "        for _ in range(200):\n"
            "            f.write(b'y' * (1 << 20))\n"
            "time.sleep(60)")
    with host.notebook_kernel(small_limits(memory_bytes=512 << 20, cpu_s_per_cell=20,
                                           wall_s_backstop=240.0)) as kernel:
        result = kernel.run_cell(code, "tmp-fill")
    assert result.fault is FaultKind.MEMORY and "cell tmp-fill" in result.error, result


def test_without_a_memory_cgroup_rlimit_as_refuses_the_allocation(host):
    """An ordinary user has no memory cgroup here: RLIMIT_AS makes the allocation fail in the student's code."""
    if host.plan.memory:
        pytest.skip("this host caps memory with a cgroup (test_memory_cap_gives_a_memory_fault)")
    # CPU to spare: zeroing the pages of the allocation that fits takes a while on a loaded machine
    with host.notebook_kernel(small_limits(cpu_s_per_cell=60)) as kernel:
        # the cap is what the forked child already maps plus the memory limit, not a fixed 16 GB
        result = kernel.run_cell(f"big = bytearray({host.limits.memory_bytes + (1 << 30)})", "hog")
        assert result.status is CellStatus.ERROR and result.error.startswith("MemoryError"), result
        assert kernel.run_cell("print('still here')").output == "still here\n"
        fits = kernel.run_cell(f"ok = bytearray({host.limits.memory_bytes // 8}); print(len(ok))", "fits")
        assert fits.status is CellStatus.OK, fits


def test_output_flood_is_capped_and_memory_stays_bounded(host):
    with host.notebook_kernel(small_limits(cpu_s_per_cell=120)) as kernel:
        kernel.run_cell("import resource\nbase = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss")
        flood = kernel.run_cell("for i in range(400_000):\n    print('y' * 99)\n'last value ' * 1000", "flood")
        assert flood.status is CellStatus.OK
        assert len(flood.output.encode()) <= host.limits.output_bytes + 200
        assert flood.output.endswith(f"[output truncated: {40_011_003 - host.limits.output_bytes} more bytes]")
        grown_kb = int(kernel.run_cell("print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)").output)
        assert grown_kb < 20_000, f"the kernel grew by {grown_kb} kB while printing 40 MB"
        # no output history: results are not kept in Out/_oh
        kernel.run_cell("bytearray(8 << 20)")
        assert kernel.run_cell("print(len(Out), len(_oh))").output == "0 0\n"


def test_raw_descriptor_flood_is_an_output_fault(host):
    with host.notebook_kernel() as kernel:
        result = kernel.run_cell("import os\nwhile True:\n    os.write(1, b'z' * 65536)", "raw")
    assert result.fault is FaultKind.OUTPUT and "cell raw" in result.error


def test_student_exit_is_a_crash_not_a_grader_fault(host):
    with host.notebook_kernel() as kernel:
        result = kernel.run_cell("import os\nos._exit(3)", "quit")
    assert result.status is CellStatus.DIED and result.fault is FaultKind.CRASHED
    assert FaultKind.CRASHED.student_fault and "cell quit" in result.error and "code 3" in result.error


def test_forged_reply_is_a_protocol_fault(host):
    with host.notebook_kernel() as kernel:
        result = kernel.run_cell("import os\nfor fd in range(3, 12):\n"
                                 "    try: os.write(fd, b'{\"type\": \"cell-result\"}\\n')\n"
                                 "    except OSError: pass", "forge")
    assert result.fault is FaultKind.PROTOCOL and "cell forge" in result.error


def test_measure_returns_checked_json_and_tensors(host):
    reply = host.measure("probe", "double", {"n": 6})
    assert torch.equal(protocol.decode_tensor(reply["y"]), torch.arange(6.0).reshape(2, 3) * 2)


@pytest.mark.parametrize("entry, kind, text", [
    ("spin", FaultKind.CPU_TIME, "1 s of CPU in the measurement probe.spin"),
    ("not_json", FaultKind.CRASHED, "the measured code failed: ProtocolError: set is not a JSON primitive"),
    ("boom", FaultKind.CRASHED, "the measured code failed: ValueError: line one"),
    ("missing", FaultKind.CRASHED,
     "the measured code failed: AttributeError: module 'course_grader.harness.probe' has no attribute 'missing'"),
])
def test_measure_faults(host, entry, kind, text):
    with pytest.raises(SandboxFault) as info:
        host.measure("probe", entry, {})
    assert info.value.kind is kind and info.value.detail == text


def test_dead_template_is_a_grader_fault_and_is_restarted(host):
    host.template.proc.kill()
    host.template.proc.wait()
    with host.notebook_kernel() as kernel:   # the host notices and starts a new template
        assert kernel.run_cell("print(1)").output == "1\n"


def test_grader_faults_are_raised_not_returned(host, monkeypatch):
    def broken(self, spawn, fds):
        raise SandboxFault(FaultKind.GRADER, "the sandbox template is gone (test)")

    monkeypatch.setattr(type(host.template), "spawn", broken)
    with pytest.raises(SandboxFault) as info:
        with host.notebook_kernel():
            pass
    assert info.value.kind is FaultKind.GRADER and not info.value.kind.student_fault


def test_a_session_answers_several_requests_and_a_fault_ends_only_its_child(host):
    limited = host.__class__.__new__(host.__class__)
    limited.__dict__.update(host.__dict__)
    limited.limits = small_limits()
    with limited.session() as session:
        first = session.measure("probe", "double", {"n": 2})
        pid = session.run.init_pid
        second = session.measure("probe", "double", {"n": 4})
        assert protocol.decode_tensor(first["y"]).tolist() == [[0.0], [2.0]]
        assert protocol.decode_tensor(second["y"]).tolist() == [[0.0, 2.0], [4.0, 6.0]]
        assert session.run.init_pid == pid and session.requests == 2   # one child answered both
        with pytest.raises(SandboxFault) as fault:
            session.measure("probe", "spin", {})
        assert fault.value.kind is FaultKind.CPU_TIME
        assert session.run is None                                     # the faulty child is gone
        assert "y" in session.measure("probe", "double", {"n": 2})     # answered by a new one
    assert runs_alive(host) == []
