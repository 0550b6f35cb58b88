"""Thin wrappers over PyTorch's own compiler diagnostics: they add, never remove.

Every number and reason printed by these helpers comes from a PyTorch tool:
``torch._dynamo.explain`` for graphs and breaks, ``CompileCounter`` for
compilations, torch's ``recompiles`` log for guard failures, and
``torch.compiler.set_stance`` for turning a recompile into an error. What a
helper prints keeps torch's whole text (graph-break ids, explanations, hints,
links, the ``#`` notes of a guard failure); it only adds a count, a table or
a label. Paths, timestamps and pids are left to the sanitize rules that store
and compare notebook outputs (``course_tools/notebooks/nbval_sanitize.cfg``).

What these helpers do not do: decide anything torch did not report. Where
``explain`` is blind (a break before the first captured op), the authority is
``fullgraph=True`` or the ``graph_breaks`` log (see ``torch_logs``).
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
    reason: str      # the first line, a short name for the break
    where: str
    full: str = ""   # torch's whole reason: explanation, hints, link

    def __str__(self) -> str:
        head = f"{self.gb} {self.reason}  (in {self.where})"
        rest = [line.rstrip() for line in self.full.strip().splitlines()[1:]]
        return "\n".join([head] + [f"    {line}" if line else "" for line in rest])


@dataclass
class CaptureReport:
    """What ``torch._dynamo.explain`` saw for one call."""

    graph_count: int
    break_count: int
    op_count: int
    breaks: list[BreakReason] = field(default_factory=list)
    graphs: list = field(default_factory=list, repr=False)
    torch_output: object = field(default=None, repr=False)  # torch's own ExplainOutput

    def __str__(self) -> str:
        lines = [f"graphs: {self.graph_count}   graph breaks: {self.break_count}   ops captured: {self.op_count}"]
        lines += [f"  break {i}: {b}" for i, b in enumerate(self.breaks, 1)]
        return "\n".join(lines)

    def show_torch(self) -> None:
        """Print torch's own ``ExplainOutput``, every section, as torch formats it."""
        print(str(self.torch_output).rstrip())

    def show_graphs(self) -> None:
        """Print the captured FX code of each graph, one after another."""
        for i, gm in enumerate(self.graphs, 1):
            print(f"--- graph {i} ---")
            print(gm.code.strip())


def explain(fn, *args, **kwargs) -> CaptureReport:
    """Run ``torch._dynamo.explain(fn)(*args)`` and keep its counts and whole reasons.

    Dynamo's compile caches are reset first so the report describes this call
    alone, not what an earlier cell already captured. Two limits of explain
    itself (torch 2.14.1): ``graph_break_count`` is the graph count minus one,
    and a break before the first captured op produces no graph and no reason,
    so it is not reported at all. ``report.show_torch()`` prints torch's own
    printout.
    """
    torch._dynamo.reset()
    with apply_log_policy():
        out = torch._dynamo.explain(fn)(*args, **kwargs)
    breaks = [
        BreakReason(gb_id(b.reason), first_line(b.reason), _where(b.user_stack[-1]) if b.user_stack else "?", b.reason)
        for b in out.break_reasons
    ]
    return CaptureReport(out.graph_count, out.graph_break_count, out.op_count, breaks, list(out.graphs), out)


def describe_exception(exc: BaseException) -> str:
    """``ExceptionType [GB id]: message`` for a compiler error: torch's whole message, the id in front."""
    name = type(exc).__name__
    gb = gb_id(str(exc))
    tag = f" [{gb}]" if gb != "-" else ""
    return f"{name}{tag}: {str(exc).strip()}"


# ---------------------------------------------------------------- recompiles

_FIRST = re.compile(r"^Recompiling function (\S+) in .*$")
_ENTRY = re.compile(r"^\s*- (\d+)/(\d+): (.*)$")


def normalize_recompile_message(message: str) -> list[str]:
    """One line per guard failure of a ``recompiles`` log record: an index, not a replacement.

    Keeps the function name and each guard failure whole, ``#`` notes
    included (the source line, or why the guard exists, e.g. 0/1
    specialisation); drops the file path of the function and the frame ids.
    ``RecompileLog`` prints torch's records themselves; this view is for code
    that classifies them.
    """
    lines: list[str] = []
    for raw in message.splitlines():
        head = _FIRST.match(raw.strip())
        if head:
            lines.append(f"recompiling {head.group(1)}")
            continue
        entry = _ENTRY.match(raw)
        if entry:
            guard = entry.group(3).rstrip()
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
        """torch's records as torch wrote them, one after another."""
        return "\n".join(m.rstrip() for m in self.messages) if self.messages else "no recompiles logged"


@contextlib.contextmanager
def collected_logs(*artifacts: str):
    """``{artifact: [messages]}`` of torch's log artifacts (what ``TORCH_LOGS=...`` would print) inside
    the block, collected, not printed; the course's quiet policy is back afterwards."""
    handlers = {a: _ListHandler() for a in artifacts}
    with apply_log_policy(**{a: True for a in artifacts}):
        attached = []
        for artifact, handler in handlers.items():
            for name in list(logging.Logger.manager.loggerDict):
                if name.endswith(f".__{artifact}"):
                    logger = logging.getLogger(name)
                    attached.append((logger, handler, logger.propagate))
                    logger.propagate = False
                    logger.addHandler(handler)
        try:
            yield {a: h.messages for a, h in handlers.items()}
        finally:
            for logger, handler, propagate in attached:
                logger.removeHandler(handler)
                logger.propagate = propagate


@contextlib.contextmanager
def recompile_log():
    """Collect torch's ``recompiles`` log inside the block, without printing it."""
    log = RecompileLog()
    logging.getLogger(RECOMPILES_LOGGER)   # exists before the first recompile
    with collected_logs("recompiles") as logs:
        try:
            yield log
        finally:
            log.messages.extend(logs["recompiles"])


def guard_failures(messages: list[str]) -> list[str]:
    """The guard-failure lines (``- 0/1: ...``) of ``recompiles`` log messages, as torch wrote them."""
    return [line.strip() for m in messages for line in m.splitlines() if _ENTRY.match(line)]


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

    Returns ``"ok: reused a cached graph"`` or, whole, the error that PyTorch
    raised because the call would have needed a recompile.
    """
    try:
        with apply_log_policy(), torch.compiler.set_stance("fail_on_recompile"):
            compiled_fn(*args, **kwargs)
    except RuntimeError as exc:
        return f"{type(exc).__name__}: {str(exc).rstrip()}"
    return "ok: reused a cached graph"
