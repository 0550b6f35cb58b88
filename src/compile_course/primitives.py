"""The measurement primitives: what a test cell can ask of a function, answered in torch's own words.

One module serves three callers with the same code:

* a test cell in the student's notebook, through ``compile_course.testing.Student`` (the
  student's own functions, in the student's kernel);
* the grader's sandboxed child, which loads a submission's function and answers one request
  (``course_grader.harness.child``);
* instructor code that needs torch's answer for its own functions (``reference``).

Every answer is a record of plain data (:class:`CallResult`, :class:`Run`, :class:`Timing`), made
by ``to_data`` and read back by ``from_data``. ``from_data`` is the one place where a reply is
validated: a wrong type, a giant number, a deep nesting or an oversized tensor raises
:class:`ReplyError`, which a test reports as a failure with its message.

What a :class:`Run` holds comes from torch itself: the graphs its backend received (as op lists),
the ``graph_breaks`` log (GB id, reason and hints as torch words them) and the ``recompiles``
log's guard failures.
"""

from __future__ import annotations

import base64
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from .diagnostics import collected_logs, gb_id, guard_failures

MAX_DEPTH = 12
MAX_ITEMS = 20_000
MAX_TEXT = 20_000
MAX_TENSOR_BYTES = 16 << 20
MAX_INT = 2 ** 63
TENSOR_DTYPES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
                 "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}
MAX_ERROR = 400
MAX_KEYWORD = 64
_PATHS = re.compile(r"(?<![\w.:/-])(/[^\s:'\"]+)+")  # file paths, not the path part of a URL


class ReplyError(AssertionError):
    """A reply or an answer that is not the data it should be. Its text is for the student.

    An ``AssertionError``: a test that meets one fails with its message, in the notebook and at grading."""


class AnswerError(ReplyError):
    """The student's answer cannot be used: missing, not a literal, not a function, not allowed."""


# --------------------------------------------------------------------------- values as data

def error_text(exc: BaseException) -> str:
    """``TypeName: first line``, without file paths, short."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose str() fails still has a type
        message = ""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {_PATHS.sub('<path>', first)}"[:MAX_ERROR].rstrip(": ")


def encode_tensor(t: torch.Tensor) -> dict:
    name = str(t.dtype).removeprefix("torch.")
    if name not in TENSOR_DTYPES:
        raise ReplyError(f"a tensor of dtype {name} cannot be reported")
    plain = t.detach().to("cpu").contiguous()
    if plain.numel() * TENSOR_DTYPES[name] > MAX_TENSOR_BYTES:
        raise ReplyError(f"a tensor of {plain.numel()} elements is too large to report")
    raw = plain.reshape(-1).view(torch.uint8).numpy().tobytes() if plain.numel() else b""
    return {"dtype": name, "shape": list(plain.shape), "data": base64.b64encode(raw).decode("ascii")}


def decode_tensor(data: Any) -> torch.Tensor:
    if type(data) is not dict or set(data) != {"dtype", "shape", "data"}:
        raise ReplyError("a tensor is reported as its dtype, shape and data")
    name, shape, text = data["dtype"], data["shape"], data["data"]
    if type(name) is not str or name not in TENSOR_DTYPES:
        raise ReplyError("a tensor's dtype is not one that can be reported")
    if type(shape) is not list or len(shape) > 8 or not all(type(n) is int and 0 <= n < MAX_INT for n in shape):
        raise ReplyError("a tensor's shape must be a short list of sizes")
    size = math.prod(shape) * TENSOR_DTYPES[name]
    if type(text) is not str or size > MAX_TENSOR_BYTES or len(text) > 4 * (MAX_TENSOR_BYTES // 3 + 1):
        raise ReplyError("a tensor's data is missing or too large")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise ReplyError("a tensor's data is not base64") from None
    if len(raw) != size:
        raise ReplyError("a tensor's data does not match its shape and dtype")
    dtype = getattr(torch, name)
    if not size:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def tensor_marks(t: torch.Tensor) -> dict:
    """What ``mark_dynamic``, ``maybe_mark_dynamic``, ``mark_static`` and ``mark_unbacked`` left on ``t``."""
    marks = {}
    for key, attr in (("dynamic", "_dynamo_dynamic_indices"), ("maybe_dynamic", "_dynamo_weak_dynamic_indices"),
                      ("static", "_dynamo_static_indices"), ("unbacked", "_dynamo_unbacked_indices")):
        dims = getattr(t, attr, None)
        if dims:
            marks[key] = sorted(int(d) for d in dims)
    return marks


def apply_marks(t: torch.Tensor, marks: dict) -> torch.Tensor:
    from torch._dynamo import decorators

    for d in marks.get("dynamic", ()):
        torch._dynamo.mark_dynamic(t, d)
    for d in marks.get("maybe_dynamic", ()):
        torch._dynamo.maybe_mark_dynamic(t, d)
    for d in marks.get("static", ()):
        torch._dynamo.mark_static(t, d)
    for d in marks.get("unbacked", ()):
        decorators.mark_unbacked(t, d)
    return t


def to_data(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: tensors (with requires_grad and dynamic-shape marks), numbers, text,
    containers and dtypes. Anything else is reported by its type name only."""
    if depth > MAX_DEPTH:
        raise ReplyError("the value is nested too deeply to report")
    if value is None or type(value) is bool:
        return value
    if type(value) is str:
        if len(value) > MAX_TEXT:
            raise ReplyError(f"it holds a text of {len(value)} characters, too long to be an answer")
        return value
    if type(value) is int:
        if abs(value) >= MAX_INT:
            raise ReplyError("it holds an integer too large to be an answer")
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.Tensor):
        out = {"tensor": encode_tensor(value)}
        if value.requires_grad:
            out["requires_grad"] = True
        marks = tensor_marks(value)
        if marks:
            out["marks"] = marks
        return out
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, (list, tuple, torch.Size)):
        if len(value) > MAX_ITEMS:
            raise ReplyError("the value has too many items to report")
        items = [to_data(v, depth + 1) for v in value]
        return {"list": items} if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise ReplyError("the value has too many items to report")
        return {"dict": [[to_data(k, depth + 1), to_data(v, depth + 1)] for k, v in value.items()]}
    return {"object": type(value).__name__[:80]}


class Opaque:
    """A value that cannot travel as data, known only by its type's name."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Opaque) and other.type_name == self.type_name

    __hash__ = None


def from_data(data: Any, depth: int = 0, budget: list | None = None) -> Any:
    """The value ``to_data`` described; :class:`ReplyError` for anything else."""
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ReplyError("the reply has too many items")
    if depth > MAX_DEPTH + 2:
        raise ReplyError("the reply is nested too deeply")
    if data is None or type(data) is bool:
        return data
    if type(data) is int:
        if abs(data) >= MAX_INT:
            raise ReplyError("the reply holds an integer too large to be an answer")
        return data
    if type(data) is float:
        return data
    if type(data) is str:
        if len(data) > MAX_TEXT:
            raise ReplyError("the reply holds a text too long to be an answer")
        return data
    if type(data) is not dict or not 1 <= len(data) <= 3:
        raise ReplyError(f"the reply holds a value of an unexpected form ({type(data).__name__})")
    if "tensor" in data:
        if set(data) - {"tensor", "requires_grad", "marks"}:
            raise ReplyError("a reported tensor has unexpected fields")
        t = decode_tensor(data["tensor"])
        marks = data.get("marks") or {}
        if type(marks) is not dict or set(marks) - {"dynamic", "maybe_dynamic", "static", "unbacked"} or not all(
                type(v) is list and all(type(d) is int and 0 <= d < t.dim() for d in v) for v in marks.values()):
            raise ReplyError("a reported tensor has malformed dynamic-shape marks")
        if data.get("requires_grad") is True:
            if not (t.is_floating_point() or t.is_complex()):
                raise ReplyError("only a floating-point tensor can require grad")
            t.requires_grad_(True)
        return apply_marks(t, marks) if marks else t
    if len(data) != 1:
        raise ReplyError("the reply holds a value of an unexpected form")
    (kind, inner), = data.items()
    if kind == "float" and inner in ("nan", "inf", "-inf"):
        return float(inner)
    if kind == "dtype" and type(inner) is str and inner in TENSOR_DTYPES:
        return getattr(torch, inner)
    if kind in ("list", "tuple") and type(inner) is list:
        items = [from_data(v, depth + 1, budget) for v in inner]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and type(inner) is list:
        out = {}
        for pair in inner:
            if type(pair) is not list or len(pair) != 2:
                raise ReplyError("a reported dict is malformed")
            key = from_data(pair[0], depth + 1, budget)
            try:
                out[key] = from_data(pair[1], depth + 1, budget)
            except TypeError:
                raise ReplyError("a reported dict has a key that cannot be a key") from None
        return out
    if kind == "object" and type(inner) is str and len(inner) <= 80:
        return Opaque(inner)
    raise ReplyError("the reply holds a value of an unexpected form")


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


# --------------------------------------------------------------------------- records

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


# what CallResult.compiled counts: torch's own counters, read before and after the call
COMPILE_STATS = {"graphs": ("stats", "unique_graphs"), "fxgraph_hit": ("inductor", "fxgraph_cache_hit"),
                 "fxgraph_miss": ("inductor", "fxgraph_cache_miss")}


def compile_stats() -> dict:
    """torch's counters that :data:`COMPILE_STATS` names, now."""
    counters = torch._dynamo.utils.counters
    return {key: int(counters[group].get(name, 0)) for key, (group, name) in COMPILE_STATS.items()}


# a stopwatch timeline (compile_course.stopwatch): its bounds and record keys, read back by read_timeline
MAX_CALLS = 2000
MAX_COMPILES = 20
CALL_KEYS = {"kind", "compile", "start", "end", "args", "keywords", "graphs", "fxgraph_hit", "fxgraph_miss"}
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
                or not seconds(c["start"]) or not seconds(c["end"]) \
                or not last <= c["start"] <= c["end"] <= data["end"] \
                or not all(type(c[k]) is int and 0 <= c[k] < 10**6 for k in ("keywords", "graphs", "fxgraph_hit",
                                                                          "fxgraph_miss")) \
                or (c["kind"] == "eager") != (c["compile"] is None) \
                or c["compile"] is not None and not (type(c["compile"]) is int and 0 <= c["compile"] < len(compiles)) \
                or type(c["args"]) is not list or len(c["args"]) > 8:
            raise ReplyError("a stopwatch's call record is malformed")
        to_data(c["args"])   # plain data, bounded
        last = c["end"]
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
    message = _PATHS.sub("<path>", message.split("User code traceback:")[0]).strip()[:4000]
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


# --------------------------------------------------------------------------- torch's logs

# --------------------------------------------------------------------------- graphs as data

def _arg_data(a: Any, depth: int = 0) -> Any:
    if depth > 6:
        raise ReplyError("a graph argument is nested too deeply")
    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if isinstance(a, (list, tuple)):
        return {"list" if isinstance(a, list) else "tuple": [_arg_data(x, depth + 1) for x in a]}
    if isinstance(a, slice):
        return {"slice": [_arg_data(a.start), _arg_data(a.stop), _arg_data(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": None}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a).removeprefix("torch.")}
    if isinstance(a, torch.layout):
        return {"layout": str(a).removeprefix("torch.")}
    if isinstance(a, dict):
        return {"kwargs": {str(k): _arg_data(v, depth + 1) for k, v in a.items()}}
    return to_data(a)


def graph_data(gm: torch.fx.GraphModule) -> dict:
    """One captured graph as data: its nodes (op, name, target's qualified name, args, kwargs), for
    each placeholder the source dynamo bound it to (``L['x']``), and for a ``get_attr`` of a pytree
    spec (a ``nonstrict_trace`` call's argument layout) the spec as ``treespec_dumps`` text."""
    from torch.fx.node import _get_qualified_name
    from torch.utils import _pytree as pytree

    nodes = []
    for n in gm.graph.nodes:
        if n.op == "call_function":
            try:
                target = _get_qualified_name(n.target)
            except Exception:  # noqa: BLE001
                target = f"<{type(n.target).__name__}>"
        else:
            target = str(n.target)
        entry = {"op": n.op, "name": n.name, "target": target,
                 "args": _arg_data(tuple(n.args)), "kwargs": _arg_data(dict(n.kwargs))}
        if n.op == "get_attr":   # a nonstrict_trace call's argument layout (a pytree spec) travels as text
            value = getattr(gm, n.target, None)
            if isinstance(value, pytree.TreeSpec):
                entry["spec"] = pytree.treespec_dumps(value)
        if n.op == "placeholder":
            arg = n.meta.get("grapharg")
            source = getattr(arg, "source", None)
            name = getattr(source, "name", None)
            entry["source"] = (name() if callable(name) else name) if source is not None else None
        nodes.append(entry)
    return {"nodes": nodes}


# --------------------------------------------------------------------------- the primitives

def upstream_gradient(out: torch.Tensor) -> torch.Tensor:
    """A fixed, non-uniform upstream gradient (1..2), so a permuted or sign-flipped gradient shows."""
    if not out.numel():
        return torch.ones_like(out)
    return torch.linspace(1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)


def restore_global_state() -> None:
    """Undo what a call may have switched globally (stance, grad mode, default dtype, seed)."""
    torch.compiler.set_stance("default")
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)


def _grad_inputs(args: tuple) -> list[torch.Tensor]:
    return [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]


def call_one(fn, args: tuple, kwargs: dict | None = None, *, grad: bool = False) -> CallResult:
    """``fn(*args, **kwargs)``; with ``grad``, also the gradients of the tensor arguments that
    require grad, for the upstream gradient :func:`upstream_gradient` of the (tensor) output."""
    kwargs = kwargs or {}
    before = compile_stats()
    start = time.perf_counter()

    def seen(result: CallResult) -> CallResult:
        after = compile_stats()
        result.wall_s = time.perf_counter() - start
        result.compiled = {k: max(0, after[k] - before[k]) for k in after}
        return result

    try:
        out = fn(*args, **kwargs)
        grads = None
        if grad:
            inputs = _grad_inputs(args)
            if not isinstance(out, torch.Tensor):
                return seen(CallResult(to_data_safe(out), None, f"returned {type(out).__name__}, not a tensor"))
            if not out.requires_grad:
                return seen(CallResult(out.detach(), None,
                                       "the output does not require grad: no gradient flows back"))
            found = torch.autograd.grad(out, inputs, upstream_gradient(out.detach()), allow_unused=True)
            grads = [g.detach() if g is not None else None for g in found]
        return seen(CallResult(out.detach() if isinstance(out, torch.Tensor) else out, grads, None))
    except Exception as exc:  # noqa: BLE001 - an error is part of the answer
        return seen(CallResult(None, None, error_text(exc)))


def to_data_safe(value: Any) -> Any:
    try:
        to_data(value)
        return value
    except ReplyError:
        return Opaque(type(value).__name__)


def compile_run(fn, calls: list[tuple], *, backend: str = "eager", fullgraph: bool = False,
                dynamic: bool | None = None, stance: str | None = None, grad: bool = False,
                fresh: bool = False) -> list[Run]:
    """``torch.compile(fn, backend=..., fullgraph=..., dynamic=...)`` called on each of ``calls`` (argument tuples).

    Without ``fresh``: one compiled function for the whole sequence, one :class:`Run`. With
    ``fresh``: Dynamo's caches are emptied and ``fn`` compiled anew before every call, one
    :class:`Run` a call (so no call's compile depends on an earlier one).
    """
    inner = torch._dynamo.lookup_backend(backend)
    runs: list[Run] = []
    graphs: list[dict] = []

    def recording(gm, example_inputs):
        try:
            graphs.append(graph_data(gm))
        except Exception:  # noqa: BLE001 - a graph that cannot be described is still compiled
            graphs.append({"nodes": [], "unreadable": True})
        return inner(gm, example_inputs)

    def start() -> tuple:
        torch._dynamo.reset()
        restore_global_state()
        if stance:
            torch.compiler.set_stance(stance)
        return torch.compile(fn, backend=recording, fullgraph=fullgraph, dynamic=dynamic), Run([])

    compiled, run = start()
    for i, args in enumerate(calls):
        if fresh and i:
            runs.append(run)
            compiled, run = start()
        before = len(graphs)
        with collected_logs("graph_breaks", "recompiles") as logs:
            result = call_one(compiled, tuple(args), grad=grad)
        run.calls.append(result)
        run.graphs_per_call.append(len(graphs) - before)
        run.graphs += graphs[before:]
        run.frames += len(graphs) - before
        run.breaks += [parse_break(m) for m in logs["graph_breaks"]]
        run.recompiles += [m[:MAX_TEXT] for m in logs["recompiles"]]
        run.guard_failures += guard_failures(logs["recompiles"])
    runs.append(run)
    torch.compiler.set_stance("default")
    return runs


def time_calls(fn, args: tuple, *, backend: str | None = None, calls: int = 20) -> Timing:
    """Times ``fn(*args)`` (or ``torch.compile(fn, backend=backend)``) with ``time.perf_counter``:
    the first call apart, then the fastest of ``calls`` steady calls. Dynamo's caches are reset
    first, so a compiled first call compiles; ``cache`` says whether inductor's FX graph cache
    was missed or hit."""
    start_all = time.perf_counter()
    target = fn
    if backend is not None:
        torch._dynamo.reset()
        target = torch.compile(fn, backend=backend)
    counters = torch._dynamo.utils.counters
    before = dict(counters["inductor"])

    def timed() -> float:
        start = time.perf_counter()
        target(*args)
        return time.perf_counter() - start

    first = timed()
    after = dict(counters["inductor"])
    cache = None
    if after.get("fxgraph_cache_miss", 0) > before.get("fxgraph_cache_miss", 0):
        cache = "cold"
    elif after.get("fxgraph_cache_hit", 0) > before.get("fxgraph_cache_hit", 0):
        cache = "warm"
    fastest = min(timed() for _ in range(max(1, calls)))
    return Timing(first, fastest, calls + 1, cache, time.perf_counter() - start_all)


class Spy:
    """Records how a function was called (as data) through :attr:`stand_in`, which then calls the real one.

    What it records for a tensor argument: dtype, shape, requires_grad and the dynamic-shape
    marks (``mark_dynamic`` and the others), plus the grad mode of the call. A test can replay
    the record on its own function (``reference.compile``) to see what those calls would compile.

    The function under test is given :attr:`stand_in`, a plain closure: it holds no attribute
    that leads to the record or to the real function (the record is the test's, not the student's).
    """

    def __init__(self, fn=None):
        calls: list = []
        self.calls = calls

        def stand_in(*args, **kwargs):
            if len(calls) < 1000:
                calls.append({"args": [describe_arg(a) for a in args], "grad_enabled": torch.is_grad_enabled(),
                              "stance": _current_stance(),
                              "kwargs": {str(k)[:MAX_KEYWORD]: describe_arg(v) for k, v in kwargs.items()}})
            return fn(*args, **kwargs) if fn is not None else None

        stand_in.__name__ = stand_in.__qualname__ = getattr(fn, "__name__", "spied")
        self.stand_in = stand_in

    def __call__(self, *args, **kwargs):
        return self.stand_in(*args, **kwargs)


def _current_stance() -> str:
    from torch._dynamo import eval_frame

    return str(getattr(getattr(eval_frame, "_stance", None), "stance", "default"))


def describe_arg(a: Any) -> dict:
    if isinstance(a, torch.Tensor):
        return {"tensor": {"dtype": str(a.dtype).removeprefix("torch."), "shape": list(a.shape),
                           "requires_grad": bool(a.requires_grad), "marks": tensor_marks(a),
                           "device": str(a.device), "contiguous": bool(a.is_contiguous())}}
    return {"value": to_data_safe_data(a)}


def to_data_safe_data(a: Any) -> Any:
    try:
        return to_data(a)
    except ReplyError:
        return {"object": type(a).__name__[:80]}


def read_spy_calls(data: Any) -> list[dict]:
    """Spy records as data, validated: ``[{"args": [...], "kwargs": {...}, "grad_enabled": bool}]``.

    A replay remakes each call on CPU, contiguous, under the default stance, with the same
    keywords (torch decides whether a keyword call's graph serves positional calls; the replay
    asks it): a record of anything else (a ``meta`` tensor, a call under ``force_eager``) cannot
    be replayed faithfully, so it is refused with a message saying which."""
    if type(data) is not list or len(data) > 1000:
        raise ReplyError("the recorded calls are malformed")
    out = []
    for n, call in enumerate(data, 1):
        if type(call) is not dict or set(call) != {"args", "kwargs", "grad_enabled", "stance"} \
                or type(call["grad_enabled"]) is not bool or type(call["args"]) is not list or len(call["args"]) > 16 \
                or type(call["kwargs"]) is not dict or len(call["kwargs"]) > 16 \
                or not all(type(k) is str and k.isidentifier() and not k.startswith("_") for k in call["kwargs"]):
            raise ReplyError("a recorded call is malformed")
        if call["stance"] != "default":
            raise ReplyError(f"call {n} was made under torch.compiler.set_stance({str(call['stance'])[:20]!r}): "
                             "a warm-up under another stance compiles nothing that serving would use")
        args = [_read_spied_arg(a, n) for a in call["args"]]
        kwargs = {k: _read_spied_arg(a, n) for k, a in call["kwargs"].items()}
        out.append({"args": args, "kwargs": kwargs, "grad_enabled": call["grad_enabled"]})
    return out


def _read_spied_arg(a: Any, n: int) -> dict:
    if type(a) is dict and set(a) == {"tensor"} and type(a["tensor"]) is dict:
        t = a["tensor"]
        if set(t) != {"dtype", "shape", "requires_grad", "marks", "device", "contiguous"} \
                or t["dtype"] not in TENSOR_DTYPES \
                or type(t["shape"]) is not list or len(t["shape"]) > 8 \
                or not all(type(d) is int and 0 <= d <= 1 << 20 for d in t["shape"]) \
                or math.prod(t["shape"]) > 1 << 22 or type(t["requires_grad"]) is not bool \
                or type(t["marks"]) is not dict:
            raise ReplyError("a recorded tensor argument is malformed")
        if t["device"] != "cpu" or t["contiguous"] is not True:
            raise ReplyError(f"call {n} was made with a tensor on {str(t['device'])[:20]!r}"
                             f"{'' if t['contiguous'] is True else ', not contiguous'}: "
                             "serving calls are contiguous CPU tensors")
        return {"tensor": {k: t[k] for k in ("dtype", "shape", "requires_grad", "marks")}}
    if type(a) is dict and set(a) == {"value"}:
        return {"value": from_data(a["value"])}
    raise ReplyError("a recorded argument is malformed")


def make_spied_args(call: dict, seed: int = 0) -> tuple[tuple, bool]:
    """Fresh positional arguments like the ones a recorded call had (random values, same dtype, shape,
    marks), and its grad mode. Its keyword arguments: :func:`make_spied_call`."""
    args, _, grad_enabled = make_spied_call(call, seed)
    return args, grad_enabled


def make_spied_call(call: dict, seed: int = 0) -> tuple[tuple, dict, bool]:
    """Fresh ``(args, kwargs, grad mode)`` like a recorded call's (random values; same dtypes, shapes, marks)."""
    g = torch.Generator().manual_seed(seed)
    args = tuple(_spied_value(a, g) for a in call["args"])
    kwargs = {k: _spied_value(a, g) for k, a in (call.get("kwargs") or {}).items()}
    return args, kwargs, call["grad_enabled"]


def _spied_value(a: dict, g: torch.Generator) -> Any:
    if "tensor" not in a:
        return a["value"]
    t = a["tensor"]
    dtype = getattr(torch, t["dtype"])
    x = torch.randn(t["shape"], generator=g).to(dtype) if dtype.is_floating_point \
        else torch.zeros(t["shape"], dtype=dtype)
    marks = t["marks"]
    if not all(type(v) is list and all(type(d) is int and 0 <= d < x.dim() for d in v)
               for v in marks.values()) or set(marks) - {"dynamic", "maybe_dynamic", "static", "unbacked"}:
        raise ReplyError("a recorded tensor's marks are malformed")
    if t["requires_grad"] and dtype.is_floating_point:
        x.requires_grad_(True)
    return apply_marks(x, marks)
