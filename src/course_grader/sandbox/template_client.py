"""The fork-server client: starts ``template.py``, shares it across hosts, sends it ``Spawn`` requests."""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import socket
import subprocess
import sys
import threading
import time

from course_grader.errors import ProtocolError, SandboxFault
from course_grader.sandbox.limits import Limits
from course_grader.sandbox.run import STOP_WAIT_S
from course_grader.status import FaultKind
from course_grader.wire import protocol
from course_grader.wire.protocol import Spawn, TemplateReady

TEMPLATE_START_S = 300.0     # importing torch on a loaded 2-core machine can take a minute


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


class SharedTemplate:
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


close_template = SharedTemplate.close
atexit.register(close_template)
