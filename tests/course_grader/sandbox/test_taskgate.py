"""The task gate (taskgate.py): without a pids cgroup, the run's reaper answers each new process or thread.

Runs without a pids cgroup are gated: an ordinary user's always; as root the tests take the host's
pids cgroup away for the run (``gated``), so both modes go through the gate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import signal
import threading
import time

import pytest

from course_grader.errors import SandboxFault
from course_grader.sandbox import taskgate
from course_grader.sandbox.run import Run
from course_grader.status import CellStatus, FaultKind

from sandbox_probes import needs_confinement, runs_alive, small_limits


def test_count_tasks_adds_every_thread_of_every_process(tmp_path):
    for pid, tids in {"1": ["1"], "7": ["7", "8", "9"], "12": ["12"]}.items():
        for tid in tids:
            (tmp_path / pid / "task" / tid).mkdir(parents=True)
    (tmp_path / "sys").mkdir()
    (tmp_path / "self").mkdir()
    assert taskgate.count_tasks(str(tmp_path)) == 5


def test_a_call_is_over_once_its_caller_blocks_elsewhere_or_is_gone():
    """The gate counts a caller it let go on until its call is over; a sleeping child is past its fork,
    a pid that does not exist made nothing more."""
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    try:
        gate = taskgate.Gate(-1, 10, proc)
        deadline = time.monotonic() + 30
        while not gate._call_over(pid) and time.monotonic() < deadline:   # until it sleeps
            time.sleep(0.05)
        assert gate._call_over(pid)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert gate._call_over(pid)
    os.close(proc)


class _RecordingSeccomp:
    """libseccomp's notification calls, answered in memory: a notification from one caller, and a log."""

    def __init__(self, log):
        self.log = log

    def seccomp_notify_receive(self, listener, req):
        req.contents.id, req.contents.pid = 1, 424242
        return 0

    def seccomp_notify_respond(self, listener, resp):
        self.log.append(("respond", resp.contents.error))
        return 0


def test_a_refusal_is_reported_before_the_caller_is_answered():
    """The grader checks the status pipe once the cell's reply is in: a refusal told after the refused
    thread's caller has its EAGAIN could come too late (under load, 'can't start new thread' with no
    fault). So the report is written first."""
    log = []
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    try:
        gate = taskgate.Gate(-1, 0, proc, report=lambda total: log.append(("report", total)) or True)
        gate.lib = _RecordingSeccomp(log)
        gate.answer()
    finally:
        os.close(proc)
    assert log == [("report", 1), ("respond", -errno.EAGAIN)]
    assert (gate.refused, gate.reported) == (1, 1)


@contextlib.contextmanager
def gated(host, limits):
    """A notebook kernel that goes through the task gate, in either mode."""
    saved = host.plan
    if host.plan.pids is not None:
        host.plan = dataclasses.replace(saved, pids=None)
    try:
        with host.notebook_kernel(limits) as kernel:
            assert kernel.run.gated
            yield kernel
    finally:
        host.plan = saved


HOLD_WHAT_YOU_CAN = r'''
import os, time
main = os.getpid()
refused = 0
try:
    while True:
        os.fork()
except BlockingIOError:
    refused = 1
if os.getpid() != main:
    time.sleep(3)
    os._exit(0)
time.sleep(1.5)
print(sum(len(os.listdir(f"/proc/{p}/task")) for p in os.listdir("/proc") if p.isdigit()), refused)
'''


@needs_confinement
def test_a_run_never_holds_more_tasks_than_its_limit(host, monkeypatch):
    """The gate counts a task it let be made before the task shows: without that, a bomb capped at 24 held
    36 to 44 (the reaper answered a queue of waiting forks before the kernel ran any). Here the grader is
    made to let the run go on after the refusals, so the bomb's processes stay, and the run counts itself."""
    monkeypatch.setattr(Run, "pids_refused", lambda self: 0)
    monkeypatch.setattr(Run, "_check_tree", lambda self: None)
    with gated(host, small_limits(pids=24, cpu_s_per_cell=10)) as kernel:
        result = kernel.run_cell(HOLD_WHAT_YOU_CAN, "hold")
    assert result.status is CellStatus.OK, result
    tasks, refused = map(int, result.output.split())
    assert refused == 1 and 20 <= tasks <= 24, result.output


LISTENER_PROBE = r'''
import ctypes, errno, os, struct
links = []
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        continue
    for fd in fds:
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
# seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, a one-instruction program: allow)
allow = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))
program = struct.pack("HxxxxxxQ", 1, ctypes.addressof(allow))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
got = libc.syscall(317 if os.uname().machine == "x86_64" else 277, 1, 8, ctypes.c_char_p(program))
second = "loaded" if got >= 0 else errno.errorcode[ctypes.get_errno()]
print(sum("seccomp notify" in link for link in links), len(links) > 3, second)
'''


@needs_confinement
def test_the_runs_code_holds_no_listener_and_cannot_install_its_own(host):
    with gated(host, small_limits()) as kernel:
        result = kernel.run_cell(LISTENER_PROBE, "listener")
    assert result.status is CellStatus.OK, result
    assert result.output.split() == ["0", "True", "EBUSY"], result.output


@needs_confinement
def test_a_run_whose_reaper_is_gone_ends_as_a_grader_fault(host):
    """Without its reaper, a gated call fails (ENOSYS) and init, which dies with its reaper, ends the run:
    it never goes on ungated, and the fault is the grader's, not the student's."""
    code = ("import threading\nwhile True:\n"
            "    t = threading.Thread(target=int); t.start(); t.join()")
    with gated(host, small_limits(cpu_s_per_cell=20)) as kernel:
        with open(f"/proc/{kernel.run.init_pid}/stat", "rb") as f:
            reaper = int(f.read().rsplit(b")", 1)[1].split()[1])
        threading.Timer(1.0, os.kill, (reaper, signal.SIGKILL)).start()
        with pytest.raises(SandboxFault) as fault:
            kernel.run_cell(code, "threads")
    assert fault.value.kind is FaultKind.GRADER
    assert str(fault.value) == "the run's reaper ended before the run did, in cell threads"
    assert runs_alive(host) == []
