"""The run supervisor: one sandboxed process tree (``Run``), watched from the grader, and how a run ends.

A ``Run`` asks the fork server for a confined process tree (see ``confine.py`` for its three
processes) and watches it from outside: replies must echo the request's nonce and pass
``protocol.decode``; CPU is read from the run's cgroup (or its process tree) against the
request's budget; a wall-clock backstop catches code that waits; the raw output of the process
is drained with a cap; the cgroup's OOM and pids counters say which limit ended a run.
A limit reached or a crash raises ``SandboxFault`` with a student kind; a grader failure raises
``SandboxFault(FaultKind.GRADER, ...)``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from pathlib import Path
from typing import Protocol

from course_grader.errors import ProtocolError, SandboxFault
from course_grader.sandbox.cgroups import CgroupPlan, RunCgroup
from course_grader.sandbox.limits import Limits
from course_grader.sandbox.policy import weakened
from course_grader.sandbox.proctree import tree_cpu_s
from course_grader.sandbox.treewatch import NPROC_MARGIN
from course_grader.sandbox.uids import UidLease
from course_grader.status import Confinement, FaultKind
from course_grader.wire import protocol
from course_grader.wire.protocol import Exited, Ready, RunMode, Spawn, Started, Stop, TasksRefused

RUN_START_S = 120.0          # fork + confinement + the IPython shell of one run (0.3 s when quiet)
STOP_WAIT_S = 5.0
POLL_S = 0.1
LATE_REPLY_S = 2.0           # after a run ended, how long its last reply may still take to be read


def megabytes(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB"


class Spawner(Protocol):
    """The fork server as a run sees it (``template_client.Template``)."""

    def spawn(self, spawn: Spawn, fds: list[int]) -> None: ...

    def address_space_limit(self, limits: Limits) -> int: ...


class RunHost(Protocol):
    """What a run (and the kernel and measure clients) need of their ``GradingHost`` (``host.py``)."""

    limits: Limits
    uids: UidLease | None
    plan: CgroupPlan
    confinement: Confinement
    hide: list[Path]
    cover: list[Path]
    compile_cache: Path | None
    is_warming: bool
    harness_source: Path
    notices: list[str]

    def next_cgroup_name(self) -> str: ...

    def ensure_template(self) -> Spawner: ...


class Run:
    """One sandboxed process tree (reaper, init, worker), watched from the grader."""

    def __init__(self, host: RunHost, mode: RunMode, cpu_s_total: int, reveal: dict[str, str],
                 limits: Limits | None = None):
        self.host, self.limits = host, limits or host.limits
        self.uid = host.uids.acquire() if host.uids else 0
        self.cgroup: RunCgroup | None = None
        self.init_pid = 0
        self.exit_status: int | None = None
        self.notices: list[str] = []
        self.raw_total, self.raw_pending = 0, bytearray()
        self.closed = False
        # no memory or pids cgroup (an ordinary user): the grader watches the run's process tree instead
        self.watch_memory = not host.plan.memory
        self.watch_tasks = not host.plan.pids
        # ... and, in a confined run (its own PID namespace), the reaper's task gate refuses a task past the
        # limit and counts it, as the pids cgroup would (taskgate.py)
        self.gated = self.watch_tasks and host.confinement != Confinement.NONE
        self.gate_refused = 0
        fds_to_close: list[int] = []
        try:
            if host.plan.memory or host.plan.pids or host.plan.cpu:
                self.cgroup = RunCgroup(host.plan, host.next_cgroup_name(), self.limits.memory_bytes, self.limits.pids)
            chan_ours, chan_theirs = socket.socketpair()
            theirs_fd = chan_theirs.detach()  # a plain descriptor from here on: closed exactly once, below
            out_r, out_w = os.pipe()
            st_r, st_w = os.pipe()
            fds_to_close = [theirs_fd, out_w, st_w]
            self.chan, self.out_fd, self.status_fd = chan_ours, out_r, st_r
            self.spawn_nonce = protocol.new_nonce()
            template = host.ensure_template()
            spawn = Spawn(
                mode=mode, confinement=Confinement(host.confinement), uid=self.uid,
                max_processes=self.limits.pids + (NPROC_MARGIN if self.watch_tasks else 0),
                task_limit=self.limits.pids if self.gated else 0,
                hide=[str(p) for p in host.hide], cover=[str(p) for p in host.cover], reveal=list(reveal),
                reveal_from=list(reveal.values()),
                cgroups=self.cgroup.join_paths if self.cgroup else [],
                compile_cache=str(host.compile_cache) if host.compile_cache else "",
                cache_writable=host.is_warming, cpu_s_total=cpu_s_total, file_bytes=self.limits.file_bytes,
                open_files=self.limits.open_files, threads=self.limits.torch_threads, nonce=self.spawn_nonce,
                memory_bytes=0 if host.plan.memory else template.address_space_limit(self.limits))
            template.spawn(spawn, fds_to_close)
        except BaseException:
            for fd in fds_to_close:
                os.close(fd)
            self.close()
            raise
        for fd in fds_to_close:
            os.close(fd)
        self.sel = selectors.DefaultSelector()
        self.chan_reader = protocol.LineReader(self.chan.fileno())
        self.status_reader = protocol.LineReader(self.status_fd, cap=1 << 16)
        self.sel.register(self.chan.fileno(), selectors.EVENT_READ, "chan")
        self.sel.register(self.out_fd, selectors.EVENT_READ, "out")
        self.sel.register(self.status_fd, selectors.EVENT_READ, "status")
        try:
            self._await_start()
        except BaseException:
            self.close()
            raise

    # -- watching ---------------------------------------------------------------------------

    def _pump(self, timeout: float) -> None:
        """Read whatever is ready on the three descriptors."""
        for key, _ in self.sel.select(timeout):
            if key.data == "chan":
                try:
                    more = self.chan_reader.feed()
                except ConnectionResetError:  # the run died with a request unread
                    more, self.chan_reader.eof = False, True
                if not more:
                    self.sel.unregister(key.fd)
            elif key.data == "out":
                chunk = os.read(self.out_fd, 1 << 16)
                if not chunk:
                    self.sel.unregister(key.fd)
                    continue
                self.raw_total += len(chunk)
                room = self.limits.output_bytes - len(self.raw_pending)
                if room > 0:
                    self.raw_pending += chunk[:room]
            else:
                if not self.status_reader.feed():
                    self.sel.unregister(key.fd)
                    continue
                while (line := self.status_reader.next_line()) is not None:
                    kind = protocol.message_type(line)
                    if kind == protocol.MessageType.STARTED:
                        started = protocol.decode(line, Started, self.spawn_nonce)
                        self.init_pid = started.pid
                        self.notices += started.notices
                    elif kind == protocol.MessageType.EXITED:
                        self.exit_status = protocol.decode(line, Exited, self.spawn_nonce).status
                    elif kind == protocol.MessageType.TASKS_REFUSED:
                        total = protocol.decode(line, TasksRefused, self.spawn_nonce).total
                        self.gate_refused = max(self.gate_refused, total)
                    else:
                        raise ProtocolError("unexpected message on the status pipe")

    def _await_start(self) -> None:
        deadline = time.monotonic() + RUN_START_S
        try:
            while (line := self.chan_reader.next_line()) is None:
                if self.init_pid == 0 and any(n.startswith("confinement failed") for n in self.notices):
                    raise SandboxFault(FaultKind.GRADER, f"the sandbox could not be set up: {self.notices[-1]}")
                if self.exit_status is not None or self.chan_reader.eof or time.monotonic() > deadline:
                    head = bytes(self.raw_pending[-600:]).decode(errors="replace").strip().replace("\n", " | ")
                    raise SandboxFault(FaultKind.GRADER, f"the sandbox did not start (exit {self.exit_status}): {head}")
                self._pump(POLL_S)
            protocol.decode(line, Ready, self.spawn_nonce)
        except ProtocolError as exc:  # only the grader's own processes write before Ready
            raise SandboxFault(FaultKind.GRADER, f"the sandbox did not start: {exc}") from None
        # fail closed: no student code runs with part of its confinement missing
        if weak := weakened(self.notices, self.host.confinement):
            raise SandboxFault(FaultKind.GRADER, f"the sandbox is weaker than required: {'; '.join(weak)}")

    def cpu_used(self) -> float | None:
        """CPU seconds the run has used: its cgroup's count, or (no cgroup) its processes' in /proc."""
        if self.cgroup:
            return self.cgroup.cpu_s()
        return tree_cpu_s(self.init_pid) if self.init_pid > 0 else None

    def request(self, message, expect: type, cpu_budget: float, wall_budget: float, where: str,
                hard_s: float | None = None, hard_why: str = "the run reached its time limit"):
        """Send ``message``; return its reply, or raise SandboxFault saying which limit ended the run.

        ``hard_s``: an absolute wall-clock end sooner than ``Limits.wall_s_hard`` (what is left of
        a whole run's time), named by ``hard_why``."""
        hard = self.limits.wall_s_hard if hard_s is None else min(hard_s, self.limits.wall_s_hard)
        if self.closed or self.exit_status is not None:
            raise SandboxFault(FaultKind.CRASHED, f"the kernel had already ended before {where}")
        if self.gated:
            self._pump(0)    # the gate's refusals so far, as a cgroup's counter would show them now
        self.raw_pending.clear()
        counters = (self.cgroup.oom_kills() if self.cgroup else 0, self.pids_refused(), where)
        cpu0, start = self.cpu_used(), time.monotonic()
        with contextlib.suppress(OSError):   # the run is gone: the checks below say why
            protocol.write_all(self.chan.fileno(), protocol.encode(message))
        while True:
            try:
                if (line := self.chan_reader.next_line()) is not None:
                    return self._reply(line, expect, message.nonce, counters)
                self._pump(POLL_S)
            except ProtocolError as exc:
                raise self._malformed(exc, counters) from None
            self._check_counters(*counters)
            if self.raw_total > self.limits.output_bytes_per_run:
                raise self._end(FaultKind.OUTPUT, f"more than {megabytes(self.limits.output_bytes_per_run)} "
                                                  f"of output by {where}")
            cpu = self.cpu_used()
            used = cpu - cpu0 if cpu is not None and cpu0 is not None else None
            if used is not None and used > cpu_budget:
                raise self._end(FaultKind.CPU_TIME, f"{cpu_budget:.0f} s of CPU in {where}")
            elapsed = time.monotonic() - start
            idle = used is None or used < self.limits.idle_cpu_fraction * elapsed
            if elapsed > min(wall_budget, hard) and (idle or elapsed > hard):
                if elapsed > hard and hard_s is not None and hard_s < self.limits.wall_s_hard:
                    raise self._end(FaultKind.WALL_TIME, f"{hard_why} (wall clock) in {where}")
                why = "almost without using CPU" if idle else "the longest any cell may run"
                raise self._end(FaultKind.WALL_TIME, f"{elapsed:.0f} s (wall clock) in {where}, {why}")
            if self.exit_status is not None or (self.chan_reader.eof and self._await_exit(2.0)):
                # A reply written just before the process ended may arrive in the same read as its
                # exit status: read what is left on the channel before calling it a death.
                if (late := self._late_line()) is not None:
                    return self._reply(late, expect, message.nonce, counters)
                self._check_counters(*counters)
                raise self._death_fault(where, cpu_budget, cpu0)

    def _reply(self, line: bytes, expect: type, nonce: str, counters: tuple):
        """The reply in ``line``, unless a limit was reached meanwhile (that fault is raised first)."""
        try:
            reply = protocol.decode(line, expect, nonce)
        except ProtocolError as exc:
            raise self._malformed(exc, counters) from None
        self._check_counters(*counters)
        return reply

    def _malformed(self, exc: ProtocolError, counters: tuple) -> SandboxFault:
        self._check_counters(*counters)   # a limit that cut the reply short is the fault, not the reply
        return self._end(FaultKind.PROTOCOL, f"a malformed reply in {counters[-1]} ({exc}); did the code write "
                                             "to the grader's channel?")

    def _end(self, kind: FaultKind, detail: str) -> SandboxFault:
        """Kill the run; the fault that ended it, to raise."""
        self.kill()
        return SandboxFault(kind, detail)

    def _late_line(self) -> bytes | None:
        """A line still buffered or unread on the channel once the run has ended (None if none)."""
        deadline = time.monotonic() + LATE_REPLY_S
        while (line := self.chan_reader.next_line()) is None and not self.chan_reader.eof:
            if time.monotonic() > deadline or self.chan.fileno() not in {k.fd for k in self.sel.get_map().values()}:
                return None
            self._pump(POLL_S)
        return line

    def pids_refused(self) -> int:
        """New processes or threads refused so far: by the pids cgroup, or by the reaper's task gate."""
        return (self.cgroup.pids_refused() if self.cgroup else 0) + self.gate_refused

    def _check_counters(self, oom0: int, pids0: int, where: str) -> None:
        """Raise the fault of a limit reached since the request: its cgroup's counters, the task gate's, or
        (without those cgroups) the run's process tree."""
        if self.gated:
            # The reaper's exit closes its status pipe before it releases the gate's listener, so a reply
            # written after a gated call failed for want of it (ENOSYS) finds the pipe closed here.
            self._pump(0)
        if self.status_reader.eof and self.exit_status is None:
            raise self._end(FaultKind.GRADER, f"the run's reaper ended before the run did, in {where}")
        tree = self._check_tree() if (self.watch_memory or self.watch_tasks) and self.init_pid > 0 else None
        if (tree and self.watch_memory and tree.memory_bytes > self.limits.memory_bytes) or (
                self.cgroup and self.cgroup.oom_kills() > oom0):
            raise self._end(FaultKind.MEMORY, f"more than {megabytes(self.limits.memory_bytes)} of memory in {where}")
        if (tree and self.watch_tasks and tree.tasks > self.limits.pids) or self.pids_refused() > pids0:
            raise self._end(FaultKind.PIDS, f"more than {self.limits.pids} processes or threads at once in {where}")

    def _check_tree(self):
        """What the run's process tree holds (``treewatch.Usage``), for the caps without their cgroups."""
        from course_grader.sandbox import treewatch
        from course_grader.sandbox.mountplan import PRIVATE_DIRS

        private = PRIVATE_DIRS if self.host.confinement != Confinement.NONE else ()   # a str compares too
        return treewatch.usage(self.init_pid, private, self.limits.memory_bytes if self.watch_memory else None)

    def _await_exit(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.exit_status is None and time.monotonic() < deadline and self.sel.get_map():
            self._pump(POLL_S)
        return True

    def _death_fault(self, where: str, cpu_budget: float, cpu0: float | None) -> SandboxFault:
        status = self.exit_status
        cpu = self.cpu_used()
        if status in (128 + signal.SIGXCPU, -signal.SIGXCPU) or (
                cpu is not None and cpu0 is not None and cpu - cpu0 >= cpu_budget):
            return SandboxFault(FaultKind.CPU_TIME, f"{cpu_budget:.0f} s of CPU in {where}")
        if status is None:
            how = "closed the grader's channel"
        elif status > 128:
            number = status - 128
            how = f"was killed by signal {signal.Signals(number).name if number in signal.valid_signals() else number}"
        else:
            how = f"exited with code {status}"
        return SandboxFault(FaultKind.CRASHED, f"the process {how} in {where}")

    # -- ending -----------------------------------------------------------------------------

    def kill(self) -> None:
        if self.cgroup:
            self.cgroup.kill()
        if self.init_pid > 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.init_pid, signal.SIGKILL)   # PID 1: the kernel ends its whole namespace
            # Without a PID namespace the worker is the init itself, in its own session.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.init_pid, signal.SIGKILL)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if getattr(self, "sel", None) is not None:
            with contextlib.suppress(OSError, ProtocolError):
                protocol.write_all(self.chan.fileno(), protocol.encode(Stop()))
            self.kill()
            with contextlib.suppress(OSError, ProtocolError):
                self._await_exit(STOP_WAIT_S)
            self.sel.close()
        for closer in (lambda: self.chan.close(), lambda: os.close(self.out_fd), lambda: os.close(self.status_fd)):
            with contextlib.suppress(AttributeError, OSError):
                closer()
        if self.cgroup:
            self.cgroup.remove()
        if self.uid and self.host.uids:
            self.host.uids.release(self.uid)
