"""The grader's side of the sandbox: ``GradingHost``, ``NotebookKernel`` and ``measure``.

One ``GradingHost`` per ``course grade`` run. It leases a block of uids (``uids.py``),
finds this host's cgroups (``cgroups.py``) and uses the process's fork server
(``template.py``), started by the first host of the process.
Every notebook kernel and every measuring request is a fresh run forked from that
template, in its own PID, mount and network namespace and its own cgroup, under its own
uid. The host watches each run from outside: replies must echo the request's nonce and
pass ``protocol.decode``; CPU is read from the run's cgroup against the cell's budget; a
wall-clock backstop catches code that waits; the raw output of the process is drained
with a cap; the cgroup's OOM and pids counters say which limit ended a run.

A fault the student's code caused comes back as data (``CellResult.fault``, or
``SandboxFault`` with a student kind from ``measure``); a grader failure always raises
``SandboxFault(FaultKind.GRADER, ...)`` so that it never costs a point.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pwd
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from course_grader.sandbox.cgroups import RUN_PREFIX, CgroupPlan, RunCgroup, sweep_stale
from course_grader.sandbox.limits import Limits
from course_grader.sandbox.proctree import tree_cpu_s
from course_grader.sandbox.treewatch import NPROC_MARGIN
from course_grader.sandbox.uids import UidLease
from course_grader.status import CellStatus, Confinement, FaultKind
from course_grader.wire import protocol
from course_grader.wire.protocol import (
    CellReply,
    Exited,
    Measure,
    MeasureReply,
    ProtocolError,
    Ready,
    RunCell,
    Spawn,
    Started,
    Stop,
    TemplateReady,
)

USERNS_NOTICE = ("not root: each run is confined in user namespaces (a read-only file system, hidden folders and "
                 "your home covered, private /tmp, no network, no capabilities, a seccomp filter); this user has no "
                 "cgroup, so the grader reads the run's process tree: its CPU, its memory (all its processes and its "
                 "private /tmp together, {memory}) and its processes and threads ({processes}) are capped there, "
                 "with RLIMIT_CPU, RLIMIT_AS and RLIMIT_NPROC as second lines; the PID namespace ends everything "
                 "with the run")
TEMPLATE_START_S = 300.0     # importing torch on a loaded 2-core machine can take a minute
RUN_START_S = 120.0          # fork + confinement + the IPython shell of one run (0.3 s when quiet)
STOP_WAIT_S = 5.0
POLL_S = 0.1
LATE_REPLY_S = 2.0           # after a run ended, how long its last reply may still take to be read


def _checkout() -> Path:
    from compile_course.paths import ROOT

    return ROOT


def git_dirs(checkout: Path) -> list[Path]:
    """Where the checkout's repository really is when ``.git`` is a file (``git worktree``, a submodule):
    the folder that file names and the common folder that one shares (the main clone's ``.git``, which
    holds every commit, solutions included). Empty when ``.git`` is a folder or absent."""
    dot_git = checkout / ".git"
    try:
        head = dot_git.read_text(errors="replace").splitlines()[0] if dot_git.is_file() else ""
    except (OSError, IndexError):
        return []
    if not head.startswith("gitdir:"):
        return []
    gitdir = (checkout / head[len("gitdir:"):].strip()).resolve()
    found = [gitdir]
    try:
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        common = None
    if common is not None and common != gitdir:
        found.append(common)
    return found


def default_hidden() -> list[Path]:
    """Instructor folders of the checkout that no run ever sees (and its repository, wherever it is)."""
    root = _checkout()
    return [root / "solutions", root / ".git", *git_dirs(root), root / "build", root / "tests",
            root / "src" / "course_grader"]


def harness_dir() -> Path:
    return _checkout() / "src" / "course_grader" / "harness"



# Notices of a confined run (root or user namespaces) that mean part of its confinement is
# missing (a namespace, a hidden folder, a private /tmp). Grading must not go on with them.
# Unconfined (--unconfined, where user namespaces are off) the whole sandbox is weaker by design.
WEAKENING = ("no mount namespace", "no PID namespace", "no network namespace", "no IPC namespace",
             "could not hide", "could not make", "could not cover")

_USERNS_REFUSAL: list[str | None] = []   # the probe's answer, once per process


def confinement_mode(unconfined: bool = False) -> Confinement:
    """How runs are confined here: root, user namespaces (not root), or none."""
    if os.geteuid() == 0:
        return Confinement.ROOT
    if not _USERNS_REFUSAL:
        from course_grader.sandbox.confine import user_namespaces_refusal

        _USERNS_REFUSAL.append(user_namespaces_refusal())
    return Confinement.USERNS if _USERNS_REFUSAL[0] is None else Confinement.NONE


def confinement_refusal(where: str, unconfined: bool) -> str | None:
    """Why grading must not start here (``where``: "this process", "this worker"), or None.

    Root confines each run under its own uid; an ordinary user confines it in user namespaces.
    Where neither is possible a run would keep the grader's own uid and see the whole file system:
    its code could read the hidden tests and write the run's output. Only ``--unconfined`` accepts that."""
    if unconfined or confinement_mode() is not Confinement.NONE:
        return None
    return (f"grading cannot confine students' code: {where} is not root, and {_USERNS_REFUSAL[0]}. Run it as "
            "root, turn user namespaces on, or grade anyway with --unconfined, where students' code could read "
            "the hidden tests and write the run's output folder (docs/sandbox.md, \"Without root\")")


def weakened(notices: list[str], confinement: Confinement = Confinement.ROOT) -> list[str]:
    """The notices that weaken a confined run (see ``WEAKENING``); none count when unconfined."""
    if confinement == Confinement.NONE:
        return []
    return [n for n in notices if n.startswith(WEAKENING)]


class SandboxFault(Exception):
    """A run produced no answer. ``kind.student_fault`` says whose fault; ``detail`` is for the student."""

    def __init__(self, kind: FaultKind, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail

    def __str__(self) -> str:
        return self.detail


@dataclass
class CellResult:
    status: CellStatus
    output: str
    error: str | None
    cpu_s: float
    fault: FaultKind | None = None        # set when a limit or a crash ended the kernel in this cell


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB"


def _address_space(pid: int) -> int:
    """The address space (``VmSize``) of process ``pid`` in bytes; 0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class Template:
    """The fork server process and its control socket."""

    def __init__(self):
        # SEQPACKET keeps each request one message, descriptors and all.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        nonce = protocol.new_nonce()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "course_grader.sandbox.template", str(theirs.fileno()), nonce],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
            cwd="/")
        theirs.close()
        self.sock, self.lock = ours, threading.Lock()
        try:
            self.ready = self._await_ready(nonce)
        except (OSError, ProtocolError) as exc:
            self.close()
            raise SandboxFault(FaultKind.GRADER, f"the sandbox template did not start: {exc}") from None
        self.notices = [] if self.ready.threads == 1 else [
            f"the template had {self.ready.threads} threads when it forked (expected 1)"]
        self.address_space = _address_space(self.proc.pid)

    def address_space_limit(self, limits: Limits) -> int:
        """RLIMIT_AS for a run without a memory cgroup: what a forked child already maps (torch maps
        about 3.5 GB of address space, most of it never touched) plus the memory limit, capped by
        ``limits.address_space_bytes``. A fixed cap would give each process 16 GB here."""
        if not self.address_space:
            return limits.address_space_bytes
        return min(limits.address_space_bytes, self.address_space + limits.memory_bytes)

    def _await_ready(self, nonce: str) -> TemplateReady:
        reader = protocol.LineReader(self.sock.fileno(), cap=1 << 16)
        deadline = time.monotonic() + TEMPLATE_START_S
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock.fileno(), selectors.EVENT_READ)
            while (line := reader.next_line()) is None:
                if time.monotonic() > deadline:
                    raise ProtocolError(f"no answer in {TEMPLATE_START_S:.0f} s")
                if sel.select(1.0) and not reader.feed():
                    raise ProtocolError(f"it exited with status {self.proc.wait()}")
        return protocol.decode(line, TemplateReady, nonce)

    def spawn(self, spawn: Spawn, fds: list[int]) -> None:
        with self.lock:
            try:
                socket.send_fds(self.sock, [protocol.encode(spawn)], fds)
            except OSError as exc:
                raise SandboxFault(FaultKind.GRADER, f"the sandbox template is gone ({exc})") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _SharedTemplate:
    """The one template of this process, shared by every ``GradingHost`` in it.

    A template holds nothing of a host: hide lists, uids, cgroups, limits and the compile
    cache all travel in each ``Spawn``. So a process that opens several hosts (a Dask worker,
    a test session, a script grading twice) starts torch's imports once, not once per host.
    It lives until this process ends: its control socket then closes and it exits (see
    ``template.py``); ``close`` ends it earlier."""

    lock = threading.Lock()
    template: Template | None = None

    @classmethod
    def get(cls) -> Template:
        """The running template: started on first use, restarted if it died."""
        with cls.lock:
            if cls.template is not None and not cls.template.alive():
                cls.template.close()
                cls.template = None
            if cls.template is None:
                cls.template = Template()
            return cls.template

    @classmethod
    def close(cls) -> None:
        with cls.lock:
            if cls.template is not None:
                cls.template.close()
                cls.template = None


close_template = _SharedTemplate.close
atexit.register(close_template)


class Run:
    """One sandboxed process tree (reaper, init, worker), watched from the grader."""

    def __init__(self, host: GradingHost, mode: str, cpu_s_total: int, reveal: dict[str, str],
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
                mode=mode, confinement=Confinement(host.confinement).value, uid=self.uid,
                max_processes=self.limits.pids + (NPROC_MARGIN if self.watch_tasks else 0),
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
                    else:
                        raise ProtocolError("unexpected message on the status pipe")

    def _await_start(self) -> None:
        try:
            self._await_ready()
        except ProtocolError as exc:  # only the grader's own processes write before Ready
            raise SandboxFault(FaultKind.GRADER, f"the sandbox did not start: {exc}") from None

    def _await_ready(self) -> None:
        deadline = time.monotonic() + RUN_START_S
        while True:
            line = self.chan_reader.next_line()
            if line is not None:
                protocol.decode(line, Ready, self.spawn_nonce)
                weak = weakened(self.notices, self.host.confinement)
                if weak:   # fail closed: no student code runs with part of its confinement missing
                    raise SandboxFault(FaultKind.GRADER, f"the sandbox is weaker than required: {'; '.join(weak)}")
                return
            if self.init_pid == 0 and self.notices and any(n.startswith("confinement failed") for n in self.notices):
                raise SandboxFault(FaultKind.GRADER, f"the sandbox could not be set up: {self.notices[-1]}")
            if self.exit_status is not None or self.chan_reader.eof or time.monotonic() > deadline:
                head = bytes(self.raw_pending[-600:]).decode(errors="replace").strip().replace("\n", " | ")
                raise SandboxFault(FaultKind.GRADER, f"the sandbox did not start (exit {self.exit_status}): {head}")
            self._pump(POLL_S)

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
        self.raw_pending.clear()
        oom0 = self.cgroup.oom_kills() if self.cgroup else 0
        pids0 = self.cgroup.pids_refused() if self.cgroup else 0
        cpu0 = self.cpu_used()
        start = time.monotonic()
        try:
            protocol.write_all(self.chan.fileno(), protocol.encode(message))
        except OSError:
            pass  # the run is gone: the checks below say why
        while True:
            try:
                line = self.chan_reader.next_line()
                if line is not None:
                    reply = protocol.decode(line, expect, message.nonce)
                    self._check_counters(oom0, pids0, where)
                    return reply
                self._pump(POLL_S)
            except ProtocolError as exc:
                self._check_counters(oom0, pids0, where)
                self.kill()
                raise SandboxFault(FaultKind.PROTOCOL, f"the kernel sent a malformed reply in {where} "
                                   f"({exc}); did the code write to the grader's channel?") from None
            self._check_counters(oom0, pids0, where)
            if self.raw_total > self.limits.output_bytes_per_run:
                self.kill()
                raise SandboxFault(FaultKind.OUTPUT, f"your code wrote more than "
                                   f"{_mb(self.limits.output_bytes_per_run)} of output by {where}")
            cpu = self.cpu_used()
            if cpu is not None and cpu0 is not None and cpu - cpu0 > cpu_budget:
                self.kill()
                raise SandboxFault(FaultKind.CPU_TIME, f"your code used {cpu_budget:.0f} s of CPU in {where}")
            elapsed = time.monotonic() - start
            if elapsed > min(wall_budget, hard):
                used = (cpu - cpu0) if cpu is not None and cpu0 is not None else None
                idle = used is None or used < self.limits.idle_cpu_fraction * elapsed
                if idle or elapsed > hard:
                    self.kill()
                    if elapsed > hard and hard_s is not None and hard_s < self.limits.wall_s_hard:
                        raise SandboxFault(FaultKind.WALL_TIME, f"{hard_why} (wall clock) in {where}")
                    why = "almost without using CPU: it was waiting, not computing" if idle \
                        else "the longest any cell may run"
                    raise SandboxFault(FaultKind.WALL_TIME, f"your code ran {elapsed:.0f} s (wall clock) in {where} "
                                       "without finishing, " + why)
            if self.exit_status is not None or (self.chan_reader.eof and self._await_exit(2.0)):
                # A reply written just before the process ended may arrive in the same read as its
                # exit status: read what is left on the channel before calling it a death.
                late = self._late_line()
                if late is not None:
                    try:
                        reply = protocol.decode(late, expect, message.nonce)
                    except ProtocolError as exc:
                        raise SandboxFault(FaultKind.PROTOCOL, f"the kernel sent a malformed reply in {where} "
                                           f"({exc}); did the code write to the grader's channel?") from None
                    self._check_counters(oom0, pids0, where)
                    return reply
                self._check_counters(oom0, pids0, where)
                raise self._death_fault(where, cpu_budget, cpu0)

    def _late_line(self) -> bytes | None:
        """A line still buffered or unread on the channel once the run has ended (None if none)."""
        deadline = time.monotonic() + LATE_REPLY_S
        while (line := self.chan_reader.next_line()) is None and not self.chan_reader.eof:
            if time.monotonic() > deadline or self.chan.fileno() not in {k.fd for k in self.sel.get_map().values()}:
                return None
            self._pump(POLL_S)
        return line

    def _check_counters(self, oom0: int, pids0: int, where: str) -> None:
        if (self.watch_memory or self.watch_tasks) and self.init_pid > 0:
            self._check_tree(where)
        if not self.cgroup:
            return
        if self.cgroup.oom_kills() > oom0:
            self.kill()
            raise SandboxFault(FaultKind.MEMORY, f"your code used more than {_mb(self.limits.memory_bytes)} "
                               f"of memory in {where}")
        if self.cgroup.pids_refused() > pids0:
            self.kill()
            raise SandboxFault(FaultKind.PIDS, f"your code tried to run more than {self.limits.pids} processes "
                               f"or threads at once in {where}")

    def _check_tree(self, where: str) -> None:
        """The memory and task caps of a run without those cgroups, read from its process tree."""
        from course_grader.sandbox import treewatch
        from course_grader.sandbox.confine import PRIVATE_DIRS

        private = PRIVATE_DIRS if self.host.confinement != Confinement.NONE else ()   # a str compares too
        used = treewatch.usage(self.init_pid, private, self.limits.memory_bytes if self.watch_memory else None)
        if used is None:
            return
        if self.watch_memory and used.memory_bytes > self.limits.memory_bytes:
            self.kill()
            raise SandboxFault(FaultKind.MEMORY, f"your code used more than {_mb(self.limits.memory_bytes)} "
                               f"of memory in {where}")
        if self.watch_tasks and used.tasks > self.limits.pids:
            self.kill()
            raise SandboxFault(FaultKind.PIDS, f"your code tried to run more than {self.limits.pids} processes "
                               f"or threads at once in {where}")

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
            return SandboxFault(FaultKind.CPU_TIME, f"your code used {cpu_budget:.0f} s of CPU in {where}")
        if status is None:
            how = "closed the grader's channel"
        elif status > 128:
            number = status - 128
            how = f"was killed by signal {signal.Signals(number).name if number in signal.valid_signals() else number}"
        else:
            how = f"exited with code {status}"
        return SandboxFault(FaultKind.CRASHED, f"the kernel ended in {where}: the process {how}")

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


class NotebookKernel:
    """A fresh sandboxed IPython kernel; cells run one at a time with ``run_cell``."""

    def __init__(self, host: GradingHost, limits: Limits | None = None):
        self.host, self.limits = host, limits or host.limits
        self.run: Run | None = None
        self.fault: SandboxFault | None = None      # what ended the kernel, if a cell did
        self.cells_run = 0
        self.started = time.monotonic()

    def __enter__(self) -> NotebookKernel:
        self.run = Run(self.host, "notebook", self.limits.cpu_s_total, reveal={}, limits=self.limits)
        return self

    def __exit__(self, *exc) -> None:
        if self.run:
            self.run.close()

    @property
    def notices(self) -> list[str]:
        return (self.run.notices if self.run else []) + self.host.notices

    def run_cell(self, source: str, cell_id: str = "") -> CellResult:
        """Run one cell. A student-caused end (limit, crash) is returned as data with ``fault`` set;
        later cells then come back ``NOT_RUN``. Only a grader failure raises ``SandboxFault``."""
        where = f"cell {cell_id}" if cell_id else f"cell {self.cells_run + 1}"
        self.cells_run += 1
        if self.fault is not None or self.run is None:
            return CellResult(CellStatus.NOT_RUN, "", "an earlier cell ended the kernel", 0.0)
        request = RunCell(cell_id=cell_id, source=source, cpu_s=self.limits.cpu_s_per_cell,
                          output_bytes=self.limits.output_bytes)
        cpu0 = self.run.cpu_used()
        left = self.limits.wall_s_per_run - (time.monotonic() - self.started)
        try:
            if left <= 0:
                raise SandboxFault(FaultKind.WALL_TIME, f"the whole run passed its {self.limits.wall_s_per_run:.0f} s "
                                   f"(wall clock) before {where}")
            reply: CellReply = self.run.request(
                request, CellReply, self.limits.cpu_s_per_cell, self.limits.wall_s_backstop, where, hard_s=left,
                hard_why=f"the whole run reached its {self.limits.wall_s_per_run:.0f} s")
        except SandboxFault as fault:
            if not fault.kind.student_fault:
                raise
            self.fault = fault
            cpu1 = self.run.cpu_used()
            used = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else 0.0
            status = CellStatus.TIMEOUT if fault.kind in (FaultKind.CPU_TIME, FaultKind.WALL_TIME) else CellStatus.DIED
            output = bytes(self.run.raw_pending).decode("utf-8", "replace")
            self.run.close()
            return CellResult(status, output, fault.detail, round(used, 3), fault.kind)
        if reply.status not in (CellStatus.OK, CellStatus.ERROR):
            self.fault = SandboxFault(FaultKind.PROTOCOL, f"the kernel sent an unknown status in {where}")
            self.run.close()
            return CellResult(CellStatus.DIED, "", self.fault.detail, 0.0, FaultKind.PROTOCOL)
        output = reply.output
        if self.run.raw_pending:
            output += bytes(self.run.raw_pending).decode("utf-8", "replace")
        if reply.dropped_bytes:
            output = output[: self.limits.output_bytes] + f"\n[output truncated: {reply.dropped_bytes} more bytes]"
        return CellResult(CellStatus(reply.status), output[: self.limits.output_bytes + 200], reply.error,
                          float(reply.cpu_s))


class GradingHost:
    """Sandbox resources for one grading run; a context manager (see the module docstring)."""

    def __init__(self, hide: list[Path] | None = None, compile_cache: Path | None = None,
                 limits: Limits | None = None, harness_source: Path | None = None):
        """``harness_source``: the folder measuring children see as ``course_grader/harness``
        (default: the real one; tests give a folder of probe harnesses)."""
        self.limits = limits or Limits()
        self.harness_source = Path(harness_source or harness_dir()).resolve()
        self.hide = list(dict.fromkeys([*default_hidden(), *(Path(p) for p in hide or [])]))
        self.compile_cache = Path(compile_cache).resolve() if compile_cache else None
        self.is_warming = False
        self.uids: UidLease | None = None
        self.template: Template | None = None
        self.plan = CgroupPlan()
        self.notices: list[str] = []
        self.confinement = Confinement.ROOT
        self.cover: list[Path] = []
        self._names = itertools.count()
        self._lock = threading.Lock()

    def __enter__(self) -> GradingHost:
        try:
            self.confinement = confinement_mode()
            if self.confinement is Confinement.ROOT:
                self.uids = UidLease()
                self.plan = CgroupPlan.detect()
                sweep_stale(self.plan, self.uids.block)
                self.notices += self.plan.notices
            elif self.confinement is Confinement.USERNS:
                # A run's uid outside is the grader's own: its home (other classes' gradebooks, hand-back
                # folders, keys...) is covered; the checkout and Python, if they live there, are bound back.
                self.cover = [Path(pwd.getpwuid(os.getuid()).pw_dir)]
                self.notices.append(USERNS_NOTICE.format(processes=self.limits.pids,
                                                         memory=_mb(self.limits.memory_bytes)))
            else:
                self.notices.append("unconfined: runs keep the grader's uid and have no namespaces or cgroups")
            if self.compile_cache:
                self.compile_cache.mkdir(parents=True, exist_ok=True)
                self._seal_cache()
            self.ensure_template()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.template = None      # the process's template outlives the host (``_SharedTemplate``)
        if self.uids:
            self.uids.close()

    @property
    def uid_block(self) -> range:
        return range(self.uids.first, self.uids.first + 32) if self.uids else range(0)

    def ensure_template(self) -> Template:
        """The process's running template; restarted if it died (a grader fault for the run that saw it)."""
        with self._lock:
            self.template = _SharedTemplate.get()
            self.notices += [n for n in self.template.notices if n not in self.notices]
            return self.template

    def next_cgroup_name(self) -> str:
        with self._lock:
            block = self.uids.block if self.uids else os.getpid()
            return f"{RUN_PREFIX}{block}-{os.getpid()}-{next(self._names)}"

    def notebook_kernel(self, limits: Limits | None = None) -> NotebookKernel:
        """A fresh kernel (use it as a context manager); ``limits`` overrides the host's for this one."""
        return NotebookKernel(self, limits)

    def measure(self, harness: str, entry: str, payload: dict) -> dict:
        """``course_grader.harness.<harness>.<entry>(payload)`` in a fresh measuring child."""
        with self.session() as session:
            return session.measure(harness, entry, payload)

    def session(self) -> MeasureSession:
        """A measuring child kept for several requests, one after the other (a context manager)."""
        return MeasureSession(self)

    @contextlib.contextmanager
    def warming(self):
        """Runs started inside may write the compile cache; afterwards they see a private copy-on-write view."""
        if self.compile_cache is None:
            raise ValueError("this GradingHost has no compile cache to warm")
        self.is_warming = True
        try:
            yield self
        finally:
            self.is_warming = False
            self._seal_cache()

    def _seal_cache(self) -> None:
        """Only the grader's user (root, or the instructor without root) may enter the cache folder on
        the host (a root warming run opens it, world-writable, while it lasts). Runs do not need more:
        their overlay's root belongs to their own uid, and the entries inside were written
        world-writable (umask 0) so that any run can copy them up."""
        if self.compile_cache is not None and self.compile_cache.stat().st_uid == os.geteuid():
            os.chmod(self.compile_cache, 0o700)


class MeasureSession:
    """One measuring child answering a sequence of requests, each with its own CPU budget.

    Starting a child costs a few tenths of a second; the questions one submission's tests ask
    (or its replays, or its reference questions: never mixed) share one. A request that ends in a
    fault ends the child; the next request starts a new one. Each request runs the harness afresh
    (the child keeps no answer between requests), but a process is a process: what one request
    changed globally, the next one sees, so never share a session between submissions.
    """

    def __init__(self, host: GradingHost):
        self.host = host
        self.run: Run | None = None
        self.requests = 0

    def __enter__(self) -> MeasureSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def measure(self, harness: str, entry: str, payload: dict) -> dict:
        protocol.check_json(payload)
        limits = self.host.limits
        if self.run is None or self.run.closed or self.run.exit_status is not None:
            self.close()
            self.run = Run(self.host, "measure", limits.cpu_s_total,
                           reveal={str(harness_dir()): str(self.host.harness_source)})
        self.requests += 1
        try:
            reply: MeasureReply = self.run.request(Measure(harness=harness, entry=entry, payload=payload),
                                                   MeasureReply, limits.cpu_s_per_cell, limits.wall_s_backstop,
                                                   f"the measurement {harness}.{entry}")
        except BaseException:
            self.close()
            raise
        if not reply.ok or reply.reply is None:
            self.close()
            raise SandboxFault(FaultKind.CRASHED, f"the measured code failed: {reply.error}")
        return reply.reply

    def close(self) -> None:
        if self.run is not None:
            self.run.close()
            self.run = None
