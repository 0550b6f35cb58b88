"""The notebook kernel, child side: runs cells one at a time in an IPython shell.

Runs in a run's worker process, after confinement and the drop to an unprivileged uid
(see ``template.worker``). Each cell's printed text goes to a capped writer (the first
``output_bytes`` kept, the rest counted); output history is off (``cache_size=0``, no
history database, ``store_history=False``), so ``Out``/``_oh`` never hold results and a
flood of output cannot grow memory. Errors are reported as text, ``"ExcType: message"``.
IPython 9 also tees every stream write into its history manager; that tee is switched off
and the manager's per-cell outputs are dropped after each cell.

Before each cell the soft ``RLIMIT_CPU`` is set to the CPU used so far plus the cell's
budget; the grader also measures the run's CPU from outside (cgroup) and enforces the
budget there, so raising the soft limit from student code gains nothing.

Everything here shares a process with student code: it reports, it never decides.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import sys

from course_grader.wire import protocol
from course_grader.wire.protocol import CellReply, Ready, RunCell


class CappedWriter:
    """A text stream that keeps the first ``cap`` bytes (UTF-8) and counts the rest."""

    def __init__(self, cap: int):
        self.cap, self.parts, self.kept, self.dropped = cap, [], 0, 0

    def write(self, s) -> int:
        s = s if isinstance(s, str) else str(s)
        data = s.encode("utf-8", "replace")
        room = self.cap - self.kept
        if room > 0:
            piece = data[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        self.dropped += max(0, len(data) - max(room, 0))
        return len(s)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("captured stream has no descriptor")

    @property
    def encoding(self) -> str:
        return "utf-8"

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", "replace")


def make_shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.cache_size = 0
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.xmode = "Plain"
    shell = InteractiveShell.instance(config=config)
    shell.showtraceback = lambda *a, **k: None
    shell.showsyntaxerror = lambda *a, **k: None
    # IPython 9 tees every write to stdout/stderr into history_manager.outputs for the whole
    # cell: a flood of prints would grow memory without bound. The kernel keeps no history.
    shell._tee = _no_tee
    return shell


@contextlib.contextmanager
def _no_tee(channel: str = "stdout"):
    yield


def forget_outputs(shell) -> None:
    """Drop what IPython kept of the last cell's results (display data, reprs)."""
    history = shell.history_manager
    for name in ("outputs", "output_hist", "output_hist_reprs"):
        kept = getattr(history, name, None)
        if kept is not None:
            kept.clear()


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _limit_cpu(budget_s: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = math.ceil(cpu_seconds()) + budget_s
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    except (ValueError, OSError):
        pass


def error_text(error: BaseException) -> str:
    try:
        message = str(error)
    except Exception:
        message = "<unprintable message>"
    return f"{type(error).__name__}: {message}"[:4000]


def run_cell(shell, request: RunCell, nonce_of_reply: str) -> CellReply:
    _limit_cpu(request.cpu_s)
    out = CappedWriter(request.output_bytes)
    real = sys.stdout, sys.stderr
    before = cpu_seconds()
    sys.stdout = sys.stderr = out
    try:
        result = shell.run_cell(request.source, store_history=False, silent=False)
        error = result.error_before_exec or result.error_in_exec
    except BaseException as exc:  # SystemExit and friends escaping IPython
        error = exc
    finally:
        sys.stdout, sys.stderr = real
        forget_outputs(shell)
    used = cpu_seconds() - before
    return CellReply(status="error" if error is not None else "ok", output=out.text(),
                     error=error_text(error) if error is not None else None,
                     cpu_s=round(used, 3), dropped_bytes=out.dropped, nonce=nonce_of_reply)


def only_the_server_replies(server_pid: int) -> None:
    """A copy of this process that the student's code forked (``os.fork()`` in a cell) returns from
    the cell too; it must not answer on the grader's channel, where its reply would be taken for the
    server's. It leaves quietly instead."""
    if os.getpid() != server_pid:
        os._exit(0)


def serve(chan_fd: int, ready_nonce: str) -> None:
    server_pid = os.getpid()
    reader = protocol.LineReader(chan_fd)
    shell = make_shell()
    protocol.write_all(chan_fd, protocol.encode(Ready(nonce=ready_nonce)))
    while (line := reader.read_line()) is not None:
        kind = protocol.message_type(line)
        if kind != protocol.MessageType.RUN_CELL:
            return
        request = protocol.decode(line, RunCell)
        reply = run_cell(shell, request, request.nonce)
        only_the_server_replies(server_pid)
        protocol.write_all(chan_fd, protocol.encode(reply))
