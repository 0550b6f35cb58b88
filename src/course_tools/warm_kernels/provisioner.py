"""A kernel provisioner that forks kernels from a warm template (see ``server``).

jupyter_client calls ``launch_kernel`` with the command of an ordinary launch. When it
is ``<this python> -m ipykernel_launcher ...`` and the environment is the template's,
the template forks the kernel; otherwise (or if the template cannot be started or
refuses) the ordinary launch runs, so a kernel always starts.

One template per process that launches kernels, started on first use with that
launch's environment and stopped when the process exits.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

# Set per kernel by jupyter_client and ipykernel, or per test by pytest; nothing the template
# imported reads them. Any other difference from the template's environment means an ordinary launch.
PER_KERNEL_ENV = ("JPY_SESSION_NAME", "PYDEVD_USE_FRAME_EVAL", "PYTEST_CURRENT_TEST")
START_TIMEOUT_S = 300   # the template imports torch: generous on a loaded 2-core machine


class ForkedKernel:
    """The Popen-like handle LocalProvisioner expects, for a kernel that is the template's child."""

    stdin = stdout = stderr = None
    returncode: int | None = None

    def __init__(self, pid: int):
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = 0   # not our child: its exit status went to the template
            os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
        return self.poll()

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Template:
    """One running template process and its socket."""

    def __init__(self, env: dict[str, str]):
        self.env = dict(env)
        # the template also removes it when its owner is gone (server.remove_socket); cleanup() then finds
        # it gone, which TemporaryDirectory ignores
        self.folder = tempfile.TemporaryDirectory(prefix="course-warm-kernels-")
        self.socket = str(Path(self.folder.name) / "template.sock")
        hook = str(Path(__file__).with_name("template_hook"))
        template_env = {**self.env, "COURSE_WARM_TEMPLATE": self.socket,
                        "PYTHONPATH": os.pathsep.join(p for p in (hook, self.env.get("PYTHONPATH")) if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ipykernel_launcher"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=template_env, cwd=self.folder.name)
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        word, _, changes = (self.proc.stdout.readline().decode() if ready else "").partition(" ")
        if word != "ready":
            self.close()
            raise OSError("the warm kernel template did not start")
        changes = json.loads(changes)
        # The environment as the template's imports left it (inductor sets TORCHINDUCTOR_CACHE_DIR to
        # its default, for one). A launch whose environment already holds those values, because the
        # launching process ran the same code, fits as well: its own imports would find them set.
        self.after_imports = {k: v for k, v in {**self.env, **changes["set"]}.items() if k not in changes["removed"]}

    def misfit(self, cmd: list[str], env: dict[str, str]) -> str:
        """Why this launch cannot be forked from the template ("" when it can)."""
        if cmd[:3] != [sys.executable, "-m", "ipykernel_launcher"]:
            return "another command"
        if self.proc.poll() is not None:
            return "the template has exited"
        keys = (set(env) | set(self.env) | set(self.after_imports)) - set(PER_KERNEL_ENV)
        differ = sorted(k for k in keys if env.get(k) not in (self.env.get(k), self.after_imports.get(k)))
        return f"environment differs in {', '.join(differ)}" if differ else ""

    def fork(self, args: list[str], env: dict[str, str], cwd: str) -> int:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(60)
            conn.connect(self.socket)
            conn.sendall(json.dumps({"args": args, "env": env, "cwd": cwd}).encode() + b"\n")
            reply = json.loads(conn.makefile("rb").readline())
        if "pid" not in reply:
            raise OSError(reply.get("error", "no pid"))
        return reply["pid"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()      # the template exits on EOF, and its kernels with it
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.folder.cleanup()


_lock = threading.Lock()
# Launches in this process: "forked", or the reason the launch was an ordinary one (the test command reports them).
launches: Counter[str] = Counter()
_template: Template | None = None
_failed = False


def template_for(env: dict[str, str]) -> Template | None:
    """This process's template, started on first use; None once it could not start."""
    global _template, _failed
    with _lock:
        if _template is None and not _failed:
            try:
                _template = Template(env)
                atexit.register(_template.close)
            except OSError:
                _failed = True
        return _template


class WarmProvisioner(LocalProvisioner):
    """LocalProvisioner whose kernels are forked from the template when they can be."""

    forked = False

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        env = dict(kwargs.get("env") or os.environ)
        if not kwargs.get("independent"):
            # As jupyter_client's launcher sets it. ipykernel reads it when imported (the template's
            # import, here) to decide whether to watch its parent, so it is part of the fit as well.
            env["JPY_PARENT_PID"] = str(os.getpid())
        cwd = os.path.abspath(kwargs.get("cwd") or os.getcwd())
        template = template_for(env)
        why = "the template could not start" if template is None else template.misfit(cmd, env)
        if not why:
            try:
                pid = template.fork(cmd[3:], env, cwd)
                kernel = ForkedKernel(pid)    # ProcessLookupError if it has already died
            except OSError as err:
                why = f"the template refused: {err}"
            else:
                self.process = kernel
                self.pid = self.pgid = pid    # the kernel calls setsid(): its own group
                self.cwd = cwd
                self.forked = True
                launches["forked"] += 1
                return self.connection_info
        launches[why] += 1
        return await super().launch_kernel(cmd, **kwargs)
