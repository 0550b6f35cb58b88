"""The payloads inside ``Measure``/``MeasureReply``: what the grader asks a measuring child and what it answers.

``protocol`` types the envelope (a ``Measure`` carries ``harness``, ``entry`` and a ``payload`` dict);
this module types the dicts inside it, for both sides:

* ``ServeRequest`` (entry ``serve``): the setup cells, the student's function (``FunctionSpec``; None
  for a reference question), the question (``Op``), its arguments (``Arg``) and per-question options
  (``CallOptions``, ``CompileOptions``, ``TimeOptions``). The grader builds it (``verdict.remote``)
  and sends ``to_data()``; the child reads it back with ``ServeRequest.from_data`` (``harness.child``).
* ``ReplayRequest`` (entry ``replay``): validated graphs (``ReplayItem``) to re-run, no student code;
  ``ReplayAnswerRequest`` (entry ``replay_answer``): graphs that call the answer's own code, re-run with
  the answer loaded (``harness.opaque``).
* The replies: :func:`read_serve_reply` and :func:`read_replay_reply` are the one place where the
  grader checks the shape of what a child answered (a dict, the fields the question calls for, as
  many results as it asked). A malformed reply raises ``PayloadError``, which the verdict code turns
  into a failed test with its reason: a student's fault, never the grader's. The records inside
  (``CallResult``, ``Run``, ``Timing``, replayed outputs) are then read by their own ``from_data``.

Standard-library dataclasses with one ``from_data`` check each (msgspec is not among the pinned
packages). The wire format is plain JSON data, field names written once here. Stdlib only: a
measuring child imports this module before the grader's package is covered (``wire/__init__``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from course_grader.errors import PayloadError


class Op(StrEnum):
    CALL = "call"
    CALL_EACH = "call_each"
    COMPILE = "compile"
    TIME = "time"


def _want(value: Any, kinds: tuple, what: str) -> Any:
    if type(value) not in kinds:
        names = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
        raise PayloadError(f"{what}: {type(value).__name__} is not {names}")
    return value


def _strings(value: Any, what: str) -> list[str]:
    _want(value, (list,), what)
    for item in value:
        _want(item, (str,), f"{what} item")
    return list(value)


def _fields(data: Any, names: set[str], what: str, optional: frozenset = frozenset()) -> dict:
    _want(data, (dict,), what)
    if not names <= set(data) <= names | optional:
        raise PayloadError(f"{what}: fields {sorted(set(data) ^ names - optional)} wrong")
    return data


# ---------------------------------------------------------------- requests (grader -> child)


@dataclass(frozen=True)
class AllowSpec:
    """What the child needs to build the grader's allow-list again (``harness.allowlist.for_cell``)."""

    provided: list[str]
    imports: list[str]
    allow: list[str]

    def to_data(self) -> dict:
        return {"provided": list(self.provided), "imports": list(self.imports), "allow": list(self.allow)}

    @classmethod
    def from_data(cls, data: Any) -> AllowSpec:
        d = _fields(data, {"provided", "imports", "allow"}, "function.allow")
        return cls(*(_strings(d[k], f"function.allow.{k}") for k in ("provided", "imports", "allow")))


@dataclass(frozen=True)
class FunctionSpec:
    """The student's function: its allow-listed source, cut out of its cell, and the allow-list."""

    source: str
    allow: AllowSpec

    def to_data(self) -> dict:
        return {"source": self.source, "allow": self.allow.to_data()}

    @classmethod
    def from_data(cls, data: Any) -> FunctionSpec | None:
        if data is None:
            return None
        d = _fields(data, {"source", "allow"}, "function")
        return cls(_want(d["source"], (str,), "function.source"), AllowSpec.from_data(d["allow"]))


class ArgKind(StrEnum):
    VALUE = "value"              # data (compile_course.measurement's to_data)
    CODE = "code"                # an expression of the test's, with the test's own definitions it needs
    SPY = "spy"                  # a setup function, called through a recording stand-in
    STOPWATCH = "stopwatch"      # a setup function, timed through a stand-in
    ANSWER = "answer"            # the answer's function, given to a setup function (``answer_fn``)


@dataclass(frozen=True)
class Arg:
    """One argument of a question: ``{"value": data}``, ``{"code": expr, "defs": [...]}``,
    ``{"spy": name}``, ``{"stopwatch": name}`` or ``{"answer": name}`` on the wire."""

    kind: ArgKind
    value: Any = None                                 # VALUE: the data; CODE: the expression; else the name
    defs: list[str] = field(default_factory=list)     # CODE only

    def to_data(self) -> dict:
        if self.kind is ArgKind.CODE:
            return {"code": self.value, "defs": list(self.defs)}
        return {self.kind.value: self.value}

    @classmethod
    def from_data(cls, data: Any) -> Arg:
        _want(data, (dict,), "argument")
        if set(data) == {"code", "defs"}:
            return cls(ArgKind.CODE, _want(data["code"], (str,), "argument.code"), _strings(data["defs"], "defs"))
        if len(data) != 1 or next(iter(data)) not in {k.value for k in ArgKind} - {ArgKind.CODE.value}:
            raise PayloadError(f"argument: fields {sorted(data)[:4]} are not an argument's")
        kind = ArgKind(next(iter(data)))
        value = data[kind.value]
        if kind is not ArgKind.VALUE:
            _want(value, (str,), f"argument.{kind.value}")
        return cls(kind, value)


@dataclass(frozen=True)
class CallOptions:
    grad: bool = False
    alone: bool = False              # call: asked of a child of its own, where nothing ran before

    def to_data(self) -> dict:
        return {"grad": self.grad, "alone": True} if self.alone else {"grad": self.grad}


@dataclass(frozen=True)
class CompileOptions:
    backend: str = "eager"
    fullgraph: bool = False
    dynamic: bool | None = None
    stance: str | None = None
    grad: bool = False
    fresh: bool = False              # compile_each: a fresh compile per call

    def to_data(self) -> dict:
        return {"backend": self.backend, "fullgraph": self.fullgraph, "dynamic": self.dynamic,
                "stance": self.stance, "grad": self.grad, "fresh": self.fresh}


@dataclass(frozen=True)
class TimeOptions:
    backend: str | None = None
    calls: int = 20
    now: str | None = None           # a nonce: a question no earlier one equals (never answered from the cache)

    def to_data(self) -> dict:
        data = {"backend": self.backend, "calls": self.calls}
        return data if self.now is None else {**data, "now": self.now}


NONE = type(None)
# each question's options: the dataclass and every field's allowed JSON types
OPTIONS: dict[Op, tuple[type, dict[str, tuple]]] = {
    Op.CALL: (CallOptions, {"grad": (bool,), "alone": (bool,)}),
    Op.CALL_EACH: (CallOptions, {"grad": (bool,)}),
    Op.COMPILE: (CompileOptions, {"backend": (str,), "fullgraph": (bool,), "dynamic": (bool, NONE),
                                  "stance": (str, NONE), "grad": (bool,), "fresh": (bool,)}),
    Op.TIME: (TimeOptions, {"backend": (str, NONE), "calls": (int,), "now": (str,)}),
}


def _options(op: Op, data: Any):
    kind, types = OPTIONS[op]
    optional = {Op.TIME: frozenset({"now"}), Op.CALL: frozenset({"alone"})}.get(op, frozenset())
    d = _fields(data, set(types) - optional, f"{op} options", optional)
    return kind(**{k: _want(v, types[k], f"{op} options.{k}") for k, v in d.items()})


@dataclass(frozen=True)
class ServeRequest:
    """One question about a function: the student's (``function`` given) or the setup cells' own."""

    setup: list[str]
    function: FunctionSpec | None
    name: str
    op: Op
    args: list                       # CALL, TIME: [Arg, ...]; CALL_EACH, COMPILE: one [Arg, ...] per call
    options: CallOptions | CompileOptions | TimeOptions
    caller: str | None = None        # a setup function the answer is given to (``answer_fn``; CALL, CALL_EACH)

    @property
    def per_call(self) -> bool:
        return self.op in (Op.CALL_EACH, Op.COMPILE)

    def to_data(self) -> dict:
        args = [[a.to_data() for a in call] for call in self.args] if self.per_call else \
            [a.to_data() for a in self.args]
        data = {"setup": list(self.setup), "function": self.function.to_data() if self.function else None,
                "name": self.name, "op": self.op.value, "args": args, "options": self.options.to_data()}
        return data if self.caller is None else {**data, "caller": self.caller}

    @classmethod
    def from_data(cls, data: Any) -> ServeRequest:
        d = _fields(data, {"setup", "function", "name", "op", "args", "options"}, "serve request",
                    frozenset({"caller"}))
        op_name = _want(d["op"], (str,), "op")
        if op_name not in {o.value for o in Op}:
            raise PayloadError(f"unknown question {op_name[:40]!r}")
        op = Op(op_name)
        _want(d["args"], (list,), "args")
        if op in (Op.CALL_EACH, Op.COMPILE):
            args = [[Arg.from_data(a) for a in _want(call, (list,), "a call's args")] for call in d["args"]]
        else:
            args = [Arg.from_data(a) for a in d["args"]]
        caller = d.get("caller")
        if caller is not None:
            _want(caller, (str,), "caller")
            if d["function"] is None or op not in (Op.CALL, Op.CALL_EACH):
                raise PayloadError("a setup function is given the answer only by call and call_each")
        return cls(_strings(d["setup"], "setup"), FunctionSpec.from_data(d["function"]),
                   _want(d["name"], (str,), "name"), op, args, _options(op, d["options"]), caller)


@dataclass(frozen=True)
class ReplayItem:
    graph: dict                      # validated by the grader (verdict.graphcheck) before it is sent, with the
                                     # ``binding`` a nonstrict_trace node may carry (harness.opaque)
    args: list                       # the call's arguments, as data

    def to_data(self) -> dict:
        return {"graph": self.graph, "args": list(self.args)}


@dataclass(frozen=True)
class ReplayRequest:
    """Captured graphs to re-run, each on its own arguments (no student code runs)."""

    items: list[ReplayItem]
    params: list[str]                # the function's parameter names: a placeholder's ``L['x']`` -> position
    grad: bool

    def to_data(self) -> dict:
        return {"items": [i.to_data() for i in self.items], "params": list(self.params), "grad": self.grad}

    @classmethod
    def from_data(cls, data: Any) -> ReplayRequest:
        d = _fields(data, {"items", "params", "grad"}, "replay request")
        return cls(_items(d["items"]), _strings(d["params"], "params"), _want(d["grad"], (bool,), "grad"))


def _items(data: Any) -> list[ReplayItem]:
    items = []
    for item in _want(data, (list,), "items"):
        i = _fields(item, {"graph", "args"}, "replay item")
        items.append(ReplayItem(_want(i["graph"], (dict,), "graph"), _want(i["args"], (list,), "args")))
    return items


@dataclass(frozen=True)
class ReplayAnswerRequest:
    """Captured graphs that call the answer's own code (entry ``replay_answer``): re-run in a child that runs
    the setup cells and loads the answer (``function``, named ``name``) and nothing else."""

    items: list[ReplayItem]
    params: list[str]
    grad: bool
    setup: list[str]
    function: FunctionSpec
    name: str

    def to_data(self) -> dict:
        return {"items": [i.to_data() for i in self.items], "params": list(self.params), "grad": self.grad,
                "setup": list(self.setup), "function": self.function.to_data(), "name": self.name}

    @classmethod
    def from_data(cls, data: Any) -> ReplayAnswerRequest:
        d = _fields(data, {"items", "params", "grad", "setup", "function", "name"}, "replay_answer request")
        function = FunctionSpec.from_data(d["function"])
        if function is None:
            raise PayloadError("replay_answer request: no answer to load")
        return cls(_items(d["items"]), _strings(d["params"], "params"), _want(d["grad"], (bool,), "grad"),
                   _strings(d["setup"], "setup"), function, _want(d["name"], (str,), "name"))


# ---------------------------------------------------------------- replies (child -> grader)

# the field of a serve reply that holds each question's answer
ANSWER_FIELD = {Op.CALL: "result", Op.CALL_EACH: "results", Op.COMPILE: "runs", Op.TIME: "timing"}


@dataclass(frozen=True)
class ServeReply:
    """A child's answer to a ``ServeRequest``: ``load_error`` (the function could not be loaded) or the
    question's answer as data (``result``, ``results``, ``runs`` or ``timing``, by ``Op``)."""

    load_error: str | None = None
    answer: Any = None
    op: Op | None = None

    def to_data(self) -> dict:
        if self.load_error is not None:
            return {"load_error": self.load_error}
        return {"load_error": None, ANSWER_FIELD[self.op]: self.answer}


def read_serve_reply(data: Any, op: Op, count: int | None = None) -> ServeReply:
    """The grader's check of a serve reply to question ``op``; ``count``: how many results or runs it
    asked for (CALL_EACH, COMPILE). Raises ``PayloadError`` saying what is wrong."""
    if type(data) is not dict:
        raise PayloadError("the measuring process replied in an unexpected form")
    load_error = data.get("load_error")
    if load_error is not None:
        return ServeReply(str(_want(load_error, (str,), "load_error")))
    name = ANSWER_FIELD[op]
    if set(data) != {"load_error", name}:
        raise PayloadError(f"the measuring process's reply to {op} has fields {sorted(data)[:6]}, not {name}")
    answer = data[name]
    if op in (Op.CALL_EACH, Op.COMPILE):
        what = "results" if op is Op.CALL_EACH else "compile runs"
        if type(answer) is not list or (count is not None and len(answer) != count):
            raise PayloadError(f"the measuring process replied with the wrong number of {what}")
    return ServeReply(None, answer, op)


def read_replay_reply(data: Any, count: int, with_answer: bool = False) -> list:
    """The grader's check of a replay reply: one result per item sent (each read by ``graphcheck``).
    ``with_answer``: the reply of ``replay_answer``, which also says whether the answer could be loaded."""
    fields = {"load_error", "results"} if with_answer else {"results"}
    if type(data) is dict and set(data) == fields and data.get("load_error") is not None:
        error = data["load_error"]
        why = error[:200] if type(error) is str else "no reason given"
        raise PayloadError(f"re-running the captured graphs gave no readable result (the answer could not be "
                           f"loaded: {why})")
    results = data.get("results") if type(data) is dict and set(data) == fields else None
    if type(results) is not list or len(results) != count:
        raise PayloadError("re-running the captured graphs gave no readable result")
    return results
