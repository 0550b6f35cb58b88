"""Execute one assembled submission in a fresh grading kernel, with limits.

The parent side of ``child.py``: start the process, send cells one at a time
(each with a fresh nonce), wait for each reply within the per-cell and
per-submission deadlines, drain the process's raw output with a cap, and kill
the whole process group when a limit is hit or the kernel dies. Returns what
happened, cell by cell; ``verdict.py`` turns that into points.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .assemble import RunCell


@dataclass
class Limits:
    cell_timeout: float = 300.0        # one cell, seconds (a cold inductor compile takes a while)
    submission_timeout: float = 900.0  # the whole notebook, seconds
    memory_bytes: int = 8 << 30        # RLIMIT_AS; torch alone maps ~1-2 GB of address space
    output_bytes: int = 8 << 20        # raw stdout/stderr of the process; beyond it the kernel is killed
    cell_output_chars: int = 20000     # printed text kept per cell
    file_bytes: int = 256 << 20        # RLIMIT_FSIZE: largest file the kernel may write
    max_processes: int = 512           # RLIMIT_NPROC for the kernel's uid (threads count)


@dataclass
class CellRun:
    index: int
    status: str                 # ok | error | timeout | died | not-run
    ename: str = ""
    evalue: str = ""
    stdout: str = ""
    fp_before: dict | None = None
    fp_after: dict | None = None


@dataclass
class RunResult:
    cells: list[CellRun]
    baseline: dict | None = None
    fault: str = ""             # why the run stopped early (timeout, died, output cap), "" if it finished
    channel_errors: list[str] = field(default_factory=list)  # forged or malformed replies
    sandbox_missing: list[str] = field(default_factory=list)
    seconds: float = 0.0
    startup_seconds: float = 0.0


class _Channel:
    """Reads JSON lines from the result pipe while draining raw output, with deadlines."""

    def __init__(self, proc, res_fd: int, output_cap: int):
        self.proc, self.res_fd, self.output_cap = proc, res_fd, output_cap
        self.sel = selectors.DefaultSelector()
        self.sel.register(res_fd, selectors.EVENT_READ, "res")
        self.sel.register(proc.stdout, selectors.EVENT_READ, "out")
        self.buf = b""
        self.raw_bytes = 0
        self.raw_head = b""
        self.res_open = True

    def read_line(self, deadline: float) -> tuple[bytes | None, str]:
        """``(line, "")`` or ``(None, reason)``: timeout, died, output."""
        while b"\n" not in self.buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "timeout"
            if not self.res_open:
                return None, "died"
            for key, _ in self.sel.select(timeout=min(remaining, 1.0)):
                if key.data == "res":
                    chunk = os.read(self.res_fd, 1 << 16)
                    if not chunk:
                        self.res_open = False
                        self.sel.unregister(self.res_fd)
                    if len(self.buf) + len(chunk) > (64 << 20):
                        return None, "output"
                    self.buf += chunk
                else:
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        self.sel.unregister(key.fd)
                        continue
                    self.raw_bytes += len(chunk)
                    if len(self.raw_head) < 4000:
                        self.raw_head += chunk[: 4000 - len(self.raw_head)]
                    if self.raw_bytes > self.output_cap:
                        return None, "output"
        line, _, self.buf = self.buf.partition(b"\n")
        return line, ""


def _kill(proc, uid: int | None) -> None:
    """Kill the kernel's process group and, when it ran under its own uid, every process of that uid."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if uid:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        os.kill(int(entry.name), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError, PermissionError):
                    pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _fault_text(reason: str, cell: RunCell, limits: Limits, proc) -> str:
    where = f"in cell {cell.label}"
    if reason == "timeout":
        return f"time limit: {where} did not finish (cell limit {limits.cell_timeout:.0f} s, notebook limit {limits.submission_timeout:.0f} s)"
    if reason == "output":
        return f"output limit: {where} printed more than {limits.output_bytes >> 20} MB"
    code = proc.poll()
    how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    hint = " (killed: out of memory?)" if code == -signal.SIGKILL else ""
    return f"the kernel died {where} ({how}){hint}"


def run_cells(cells: list[RunCell], limits: Limits, hide: list[Path], uid: int | None) -> RunResult:
    """Run ``cells`` in order in a new sandboxed kernel; never raises for student behaviour."""
    start = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="course-grade-")
    cmd_r, cmd_w = os.pipe()
    res_r, res_w = os.pipe()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
           "PYTHONDONTWRITEBYTECODE": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "compile_course.grading.child", str(cmd_r), str(res_w)],
        pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        cwd=workdir, env=env, start_new_session=True,
    )
    os.close(cmd_r)
    os.close(res_w)
    cmd = os.fdopen(cmd_w, "w", encoding="utf-8")
    chan = _Channel(proc, res_r, limits.output_bytes)
    result = RunResult(cells=[])
    deadline_all = start + limits.submission_timeout

    def send(obj: dict) -> bool:
        try:
            cmd.write(json.dumps(obj) + "\n")
            cmd.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def receive(nonce: str, deadline: float) -> tuple[dict | None, str]:
        line, reason = chan.read_line(deadline)
        if line is None:
            return None, reason
        try:
            msg = json.loads(line)
        except ValueError:
            result.channel_errors.append("malformed data on the grader channel")
            return None, "forged"
        if msg.get("nonce") != nonce:
            result.channel_errors.append("a reply with the wrong nonce on the grader channel (forged?)")
            return None, "forged"
        return msg, ""

    try:
        nonce = secrets.token_hex(16)
        sandbox = {"workdir": workdir, "hide": [str(p) for p in hide], "uid": uid,
                   "memory_bytes": limits.memory_bytes, "file_bytes": limits.file_bytes,
                   "max_processes": limits.max_processes}
        send({"nonce": nonce, "sandbox": sandbox, "cell_output_chars": limits.cell_output_chars})
        ready, reason = receive(nonce, min(deadline_all, time.monotonic() + max(limits.cell_timeout, 120)))
        result.startup_seconds = time.monotonic() - start
        if ready is None:
            head = chan.raw_head.decode(errors="replace").strip().splitlines()[-3:]
            result.fault = f"the grading kernel failed to start ({reason}): " + " | ".join(head)
            result.cells = [CellRun(c.index, "not-run") for c in cells]
            return result
        result.baseline = ready["fp"]
        result.sandbox_missing = ready.get("sandbox_missing", [])
        for pos, cell in enumerate(cells):
            nonce = secrets.token_hex(16)
            ok = send({"op": "run", "nonce": nonce, "index": cell.index, "code": cell.code,
                       "check": cell.graded, "pin": cell.pins})
            deadline = min(deadline_all, time.monotonic() + limits.cell_timeout)
            reply, reason = receive(nonce, deadline) if ok else (None, "died")
            if reply is None:
                if reason == "forged":
                    result.fault = "the grader channel received data that did not come from the grader"
                else:
                    if reason == "died":
                        try:
                            proc.wait(timeout=5)
                        except subprocess.TimeoutExpired:
                            pass
                    result.fault = _fault_text(reason, cell, limits, proc)
                result.cells.append(CellRun(cell.index, "timeout" if reason == "timeout" else "died"))
                result.cells += [CellRun(c.index, "not-run") for c in cells[pos + 1:]]
                break
            result.cells.append(CellRun(
                cell.index, reply.get("status") if reply.get("status") in ("ok", "error") else "error",
                str(reply.get("ename", ""))[:200], str(reply.get("evalue", ""))[:4000], str(reply.get("stdout", ""))[: limits.cell_output_chars],
                reply.get("fp_before"), reply.get("fp_after")))
        else:
            send({"op": "stop"})
        return result
    finally:
        _kill(proc, uid)
        cmd.close()
        os.close(res_r)
        proc.stdout.close()
        result.seconds = time.monotonic() - start
        shutil.rmtree(workdir, ignore_errors=True)
