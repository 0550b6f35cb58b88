"""Thin wrappers over PyTorch's own compiler diagnostics.

Every number and reason printed by these helpers comes from a PyTorch tool:
``torch._dynamo.explain`` for graphs and breaks, ``CompileCounter`` for
compilations, torch's ``recompiles`` log for guard failures, and
``torch.compiler.set_stance`` for turning a recompile into an error. The
helpers only trim what changes from run to run (file paths, timestamps, pids)
so a notebook's stored output can be compared with a fresh run.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass, field

import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend

from .quiet import apply_log_policy

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
_GB_URL = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)


def gb_id(text: str) -> str:
    """The graph-break id (e.g. ``GB0170``) named in a Dynamo message, or ``"-"``."""
    match = _GB_URL.search(text)
    return match.group(1).upper() if match else "-"


def first_line(text: str) -> str:
    """The first non-empty line of a message, stripped."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def _where(frame) -> str:
    """``function, line N`` for a stack frame, without the (volatile) file path."""
    return f"{frame.name}, line {frame.lineno}"


@dataclass
class BreakReason:
    gb: str
    reason: str
    where: str

    def __str__(self) -> str:
        return f"{self.gb:7} {self.reason}  (in {self.where})"


@dataclass
class CaptureReport:
    """What ``torch._dynamo.explain`` saw for one call."""

    graph_count: int
    break_count: int
    op_count: int
    breaks: list[BreakReason] = field(default_factory=list)
    graphs: list = field(default_factory=list, repr=False)

    def __str__(self) -> str:
        lines = [f"graphs: {self.graph_count}   graph breaks: {self.break_count}   ops captured: {self.op_count}"]
        lines += [f"  break {i}: {b}" for i, b in enumerate(self.breaks, 1)]
        return "\n".join(lines)

    def show_graphs(self) -> None:
        """Print the captured FX code of each graph, one after another."""
        for i, gm in enumerate(self.graphs, 1):
            print(f"--- graph {i} ---")
            print(gm.code.strip())


def explain(fn, *args, **kwargs) -> CaptureReport:
    """Run ``torch._dynamo.explain(fn)(*args)`` and keep its counts and reasons.

    Dynamo's compile caches are reset first so the report describes this call
    alone, not what an earlier cell already captured.
    """
    torch._dynamo.reset()
    with apply_log_policy():
        out = torch._dynamo.explain(fn)(*args, **kwargs)
    breaks = [
        BreakReason(gb_id(b.reason), first_line(b.reason), _where(b.user_stack[-1]) if b.user_stack else "?")
        for b in out.break_reasons
    ]
    return CaptureReport(out.graph_count, out.graph_break_count, out.op_count, breaks, list(out.graphs))


def describe_exception(exc: BaseException) -> str:
    """``ExceptionType [GB id]: first line`` for a compiler error, without paths."""
    name = type(exc).__name__
    gb = gb_id(str(exc))
    tag = f" [{gb}]" if gb != "-" else ""
    return f"{name}{tag}: {first_line(str(exc))}"


# ---------------------------------------------------------------- recompiles

_FIRST = re.compile(r"^Recompiling function (\S+) in .*$")
_ENTRY = re.compile(r"^\s*- (\d+)/(\d+): (.*)$")


def normalize_recompile_message(message: str) -> list[str]:
    """Reduce one ``recompiles`` log record to stable lines.

    Keeps the function name and each guard failure (with the index of the
    cached variant it was checked against); drops file paths, source-line
    comments, frame ids and the user stack trace.
    """
    lines: list[str] = []
    for raw in message.splitlines():
        head = _FIRST.match(raw.strip())
        if head:
            lines.append(f"recompiling {head.group(1)}")
            continue
        entry = _ENTRY.match(raw)
        if entry:
            guard = entry.group(3).split("  #")[0].rstrip()
            guard = re.sub(r"\s+#.*$", "", guard)
            lines.append(f"  variant {entry.group(2)} failed: {guard}")
    return lines


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass
class RecompileLog:
    """Guard failures recorded from torch's ``recompiles`` log."""

    messages: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.messages)

    def lines(self) -> list[str]:
        out: list[str] = []
        for m in self.messages:
            out += normalize_recompile_message(m)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines()) if self.messages else "no recompiles logged"


@contextlib.contextmanager
def recompile_log():
    """Collect torch's ``recompiles`` log inside the block, without printing it."""
    log = RecompileLog()
    handler = _ListHandler()
    logger = logging.getLogger(RECOMPILES_LOGGER)
    with apply_log_policy(recompiles=True):
        old_propagate = logger.propagate
        logger.propagate = False
        logger.addHandler(handler)
        try:
            yield log
        finally:
            logger.removeHandler(handler)
            logger.propagate = old_propagate
            log.messages.extend(handler.messages)


# ---------------------------------------------------------------- compile counts

class CompileWatch:
    """Count compilations of a function and record why each recompile happened.

    ``watch = CompileWatch(fn, backend="eager")`` compiles ``fn`` with a
    CompileCounter wrapped around the real backend; ``watch(*args)`` calls it
    with the recompiles log captured. ``watch.frames`` is the number of
    frames Dynamo compiled (a recompile adds one), ``watch.log`` the guard
    failures behind each recompile.
    """

    def __init__(self, fn, backend: str = "eager", reset: bool = True, **compile_kwargs) -> None:
        if reset:
            torch._dynamo.reset()  # start from empty caches so the count is this function's alone
        self.counter = CompileCounterWithBackend(backend)
        self.compiled = torch.compile(fn, backend=self.counter, **compile_kwargs)
        self.log = RecompileLog()
        self.calls: list[tuple[str, int]] = []

    @property
    def frames(self) -> int:
        return self.counter.frame_count

    def __call__(self, *args, label: str | None = None, **kwargs):
        before = self.frames
        with recompile_log() as log:
            result = self.compiled(*args, **kwargs)
        self.log.messages.extend(log.messages)
        self.calls.append((label or _signature(args), self.frames - before))
        return result

    def history(self) -> str:
        """One line a call: its label and how many new compilations it caused."""
        width = max((len(lbl) for lbl, _ in self.calls), default=0)
        rows = [f"{lbl:<{width}}  new compilations: {new}" for lbl, new in self.calls]
        rows.append(f"total compilations: {self.frames}   recompiles logged: {self.log.count}")
        return "\n".join(rows)


def _signature(args) -> str:
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            dtype = str(a.dtype).replace("torch.", "")
            grad = ", requires_grad" if a.requires_grad else ""
            parts.append(f"{dtype}{list(a.shape)}{grad}")
        else:
            parts.append(type(a).__name__)
    return "(" + ", ".join(parts) + ")"


def call_without_recompile(compiled_fn, *args, **kwargs) -> str:
    """Call under ``set_stance("fail_on_recompile")`` and say what happened.

    Returns ``"ok: reused a cached graph"`` or the normalized error that
    PyTorch raised because the call would have needed a recompile.
    """
    try:
        with apply_log_policy(), torch.compiler.set_stance("fail_on_recompile"):
            compiled_fn(*args, **kwargs)
    except RuntimeError as exc:
        text = str(exc)
        lines = [f"{type(exc).__name__}: {first_line(text).split(' filename:')[0]}"]
        lines += normalize_recompile_message("\n".join(text.splitlines()[1:]))
        return "\n".join(lines)
    return "ok: reused a cached graph"
