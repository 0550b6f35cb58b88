"""The records a measurement returns, as plain data both ways: CallResult, Run, Break, Timing and a timeline.

Each record is a dataclass with ``to_data`` (what a measuring child sends) and ``from_data`` (what
the test's side reads back, validated: :class:`~compile_course.measurement.codec.ReplyError` for a
malformed or out-of-range field). What a :class:`Run` holds comes from torch itself: the graphs its
backend received (as op lists), the ``graph_breaks`` log (GB id, reason and hints as torch words
them) and the ``recompiles`` log's guard failures.

Not here: making the records (``run``) and the values inside them (``codec``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from ..diagnostics import gb_id
from .codec import FILE_PATHS, MAX_ERROR, MAX_TEXT, ReplyError, from_data, to_data
from .spy import read_spy_calls


def _field(data: dict, key: str, kind: type | tuple, default=None):
    value = data.get(key, default)
    if value is not None and not isinstance(value, kind) or type(value) is bool and kind in (int, float):
        raise ReplyError(f"the reply's {key!r} is not {getattr(kind, '__name__', kind)}")
    return value


def _texts(data: dict, key: str, limit: int = 200) -> list[str]:
    value = data.get(key) or []
    if type(value) is not list or len(value) > limit or not all(type(s) is str and len(s) <= MAX_TEXT for s in value):
        raise ReplyError(f"the reply's {key!r} is not a short list of texts")
    return list(value)


@dataclass
class CallResult:
    """One call: its return value (data), the gradients of its tensor arguments that required grad
    (``grad=True``), its error (``TypeName: message``), what any :func:`spy` argument recorded, and
    what the call did as seen around it: ``wall_s`` (its wall-clock seconds) and ``compiled`` (the
    graphs Dynamo compiled during it, and inductor's FX graph cache hits and misses)."""

    value: Any = None
    grads: list | None = None
    error: str | None = None
    spied: list | None = None
    wall_s: float | None = None
    compiled: dict | None = None
    timeline: dict | None = None   # what a ``stopwatch`` argument saw (``compile_course.stopwatch``)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_data(self) -> dict:
        return {"value": to_data(self.value), "grads": None if self.grads is None else to_data(self.grads),
                "error": self.error, "spied": self.spied, "wall_s": self.wall_s, "compiled": self.compiled,
                "timeline": self.timeline}

    @classmethod
    def from_data(cls, data: Any) -> CallResult:
        if type(data) is not dict or set(data) != {"value", "grads", "error", "spied", "wall_s", "compiled",
                                                   "timeline"}:
            raise ReplyError("a call's result is malformed")
        grads = None if data["grads"] is None else from_data(data["grads"])
        if grads is not None and (type(grads) is not list
                                  or not all(g is None or isinstance(g, torch.Tensor) for g in grads)):
            raise ReplyError("a call's gradients are malformed")
        error = _field(data, "error", str)
        spied = None if data["spied"] is None else read_spy_calls(data["spied"])
        wall = data["wall_s"]
        if wall is not None and (type(wall) not in (int, float) or not 0 <= wall < 1e6):
            raise ReplyError("a call's wall time is malformed")
        compiled = data["compiled"]
        if compiled is not None and (type(compiled) is not dict or set(compiled) != set(COMPILE_STATS)
                                     or not all(type(v) is int and 0 <= v < 10**6 for v in compiled.values())):
            raise ReplyError("a call's compile record is malformed")
        timeline = None if data["timeline"] is None else read_timeline(data["timeline"])
        return cls(from_data(data["value"]), grads, None if error is None else error[:MAX_ERROR], spied,
                   None if wall is None else float(wall), compiled, timeline)


# what CallResult.compiled counts: torch's own counters, read before and after the call (run.compile_stats)
COMPILE_STATS = {"graphs": ("stats", "unique_graphs"), "fxgraph_hit": ("inductor", "fxgraph_cache_hit"),
                 "fxgraph_miss": ("inductor", "fxgraph_cache_miss")}


# a stopwatch timeline (compile_course.stopwatch): its bounds and record keys, read back by read_timeline
MAX_CALLS = 2000
MAX_COMPILES = 20
CALL_KEYS = {"kind", "compile", "enter", "start", "end", "exit", "args", "keywords", "graphs", "fxgraph_hit",
             "fxgraph_miss", "threads", "grad", "given", "raised"}
MAX_RAISED = 80   # an exception's name, as a call record keeps it
COMPILE_KEYS = {"backend", "fullgraph", "dynamic", "mode"}


def read_timeline(data: Any) -> dict:
    """A ``compile_course.stopwatch`` timeline as data, validated (:class:`ReplyError` otherwise)."""
    def seconds(x) -> bool:
        return type(x) in (int, float) and math.isfinite(x) and 0 <= x < 1e6

    if type(data) is not dict or set(data) != {"calls", "compiles", "end"} or not seconds(data["end"]):
        raise ReplyError("a stopwatch's record is malformed")
    calls, compiles = data["calls"], data["compiles"]
    if type(calls) is not list or len(calls) > MAX_CALLS or type(compiles) is not list or len(compiles) > MAX_COMPILES:
        raise ReplyError("a stopwatch's record is malformed")
    for c in compiles:
        if type(c) is not dict or set(c) != COMPILE_KEYS or type(c["backend"]) is not str or len(c["backend"]) > 80 \
                or type(c["fullgraph"]) is not bool or c["dynamic"] not in (None, True, False, "<other>") \
                or not (c["mode"] is None or type(c["mode"]) is str and len(c["mode"]) <= 80):
            raise ReplyError("a stopwatch's compile record is malformed")
    last = 0.0
    for c in calls:
        if type(c) is not dict or set(c) != CALL_KEYS or c["kind"] not in ("eager", "compiled") \
                or not all(seconds(c[k]) for k in ("enter", "start", "end", "exit")) \
                or not last <= c["enter"] <= c["start"] <= c["end"] <= c["exit"] <= data["end"] \
                or not all(type(c[k]) is int and 0 <= c[k] < 10**6 for k in ("keywords", "graphs", "fxgraph_hit",
                                                                          "fxgraph_miss", "threads")) \
                or (c["kind"] == "eager") != (c["compile"] is None) \
                or c["compile"] is not None and not (type(c["compile"]) is int and 0 <= c["compile"] < len(compiles)) \
                or type(c["args"]) is not list or len(c["args"]) > 8 \
                or type(c["grad"]) is not bool or not (c["given"] is None or type(c["given"]) is bool) \
                or c["raised"] is not None and not (type(c["raised"]) is str and len(c["raised"]) <= MAX_RAISED
                                                    and c["raised"].isidentifier()):
            raise ReplyError("a stopwatch's call record is malformed")
        to_data(c["args"])   # plain data, bounded
        last = c["exit"]
    return {"calls": [dict(c) for c in calls], "compiles": [dict(c) for c in compiles], "end": float(data["end"])}


@dataclass
class Break:
    """One graph break, in torch's words (the ``graph_breaks`` log): its GB id, the reason, torch's
    explanation and hints, and the message itself (file paths and the user-code traceback left out)."""

    gb_id: str | None
    reason: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    text: str = ""

    def __str__(self) -> str:
        return f"{self.gb_id or 'graph break'}: {self.explanation or self.reason}"


def parse_break(message: str) -> Break:
    """A ``graph_breaks`` log message as a :class:`Break`."""
    gb = gb_id(message)
    message = FILE_PATHS.sub("<path>", message.split("User code traceback:")[0]).strip()[:4000]
    reason, explanation, hints = "", "", []
    for line in message.splitlines():
        s = line.strip()
        if s.startswith("Graph Break Reason:"):
            reason = s.removeprefix("Graph Break Reason:").strip()
        elif s.startswith("Explanation:") and not explanation:
            explanation = s.removeprefix("Explanation:").strip()
        elif s.startswith("Hint:"):
            hints.append(s.removeprefix("Hint:").strip())
    if not reason:
        reason = next((s.strip() for s in message.splitlines() if s.strip()), "")
    return Break(None if gb == "-" else gb, reason[:MAX_ERROR], explanation[:MAX_ERROR],
                 [h[:MAX_ERROR] for h in hints[:8]], message)


@dataclass
class Run:
    """A function compiled once and called on a sequence of inputs.

    ``frames``: graphs the backend compiled (as ``CompileCounter`` counts them); ``graphs``: each
    as an op list (``graph_data``); ``breaks``: the ``graph_breaks`` log; ``guard_failures``: the
    ``recompiles`` log's ``- 0/0: ...`` lines; ``calls``: one :class:`CallResult` a call.
    """

    calls: list[CallResult]
    frames: int = 0
    graphs: list[dict] = field(default_factory=list)
    graphs_per_call: list[int] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)
    guard_failures: list[str] = field(default_factory=list)
    recompiles: list[str] = field(default_factory=list)

    def to_data(self) -> dict:
        return {"calls": [c.to_data() for c in self.calls], "frames": self.frames, "graphs": self.graphs,
                "graphs_per_call": self.graphs_per_call, "breaks": [b.text for b in self.breaks],
                "guard_failures": self.guard_failures, "recompiles": self.recompiles}

    @classmethod
    def from_data(cls, data: Any) -> Run:
        if type(data) is not dict or set(data) != {"calls", "frames", "graphs", "graphs_per_call", "breaks",
                                                   "guard_failures", "recompiles"}:
            raise ReplyError("a compile run's record is malformed")
        calls = data["calls"]
        if type(calls) is not list or len(calls) > 1000:
            raise ReplyError("a compile run's calls are malformed")
        graphs = data["graphs"]
        if type(graphs) is not list or len(graphs) > 200 or not all(type(g) is dict for g in graphs):
            raise ReplyError("a compile run's graphs are malformed")
        per_call = data["graphs_per_call"]
        if type(per_call) is not list or len(per_call) != len(calls) or not all(
                type(n) is int and 0 <= n <= len(graphs) for n in per_call) or sum(per_call) != len(graphs):
            raise ReplyError("a compile run's graph counts are malformed")
        frames = _field(data, "frames", int, 0)
        if frames != len(graphs):  # a frame is a graph the backend received: one count, never two stories
            raise ReplyError("a compile run's frame count does not match its graphs")
        return cls([CallResult.from_data(c) for c in calls], frames, graphs, per_call,
                   [parse_break(t) for t in _texts(data, "breaks")], _texts(data, "guard_failures"),
                   _texts(data, "recompiles"))


@dataclass
class Timing:
    """Wall-clock seconds of calls, measured with ``time.perf_counter`` around each call.

    ``first_s``: the first call (for a compiled function: compilation included); ``fastest_s``:
    the fastest of the steady calls after it; ``cache``: for inductor, whether the first call
    missed (``"cold"``) or hit (``"warm"``) the FX graph cache, from inductor's counters; None
    otherwise. ``wall_s``: the whole measurement.
    """

    first_s: float
    fastest_s: float
    calls: int
    cache: str | None
    wall_s: float

    def to_data(self) -> dict:
        return {"first_s": self.first_s, "fastest_s": self.fastest_s, "calls": self.calls, "cache": self.cache,
                "wall_s": self.wall_s}

    @classmethod
    def from_data(cls, data: Any) -> Timing:
        if type(data) is not dict or set(data) != {"first_s", "fastest_s", "calls", "cache", "wall_s"}:
            raise ReplyError("a timing record is malformed")
        nums = [data[k] for k in ("first_s", "fastest_s", "wall_s")]
        if not all(type(x) in (int, float) and 0 <= x < 1e6 for x in nums) or type(data["calls"]) is not int \
                or data["cache"] not in (None, "cold", "warm"):
            raise ReplyError("a timing record holds values out of range")
        return cls(float(nums[0]), float(nums[1]), data["calls"], data["cache"], float(nums[2]))
