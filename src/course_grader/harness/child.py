"""The measuring child's entries: answer one test question, or replay validated graphs.

``serve(payload)`` runs the exercise's setup cells, loads the student's function (allow-listed
again here, builtins limited), builds the arguments the test sent (data, ``code`` expressions,
``spy`` stand-ins) and answers with ``compile_course.primitives``: ``call``, ``compile`` or ``time``.
With no function in the payload it answers for a setup cell's function (``reference``); with a
``caller``, ``call`` calls that setup function with the student's function among its arguments.

``replay(payload)`` runs no student code: it interprets a graph that the grader has validated
(``course_grader.verdict.graphcheck``) on the test's own inputs and replies its outputs and gradients.
``replay_answer(payload)`` does the same for a graph that calls the answer's own code (a custom op,
a ``nonstrict_trace`` function: ``opaque``), in a child of its own that loads the answer first.

Each reads its payload with ``course_grader.wire.payloads`` (``ServeRequest``, ``ReplayRequest``,
``ReplayAnswerRequest``: the types the grader built it with) and answer with its ``ServeReply``;
a payload of another shape is refused before anything runs.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import operator
import re
import sys

import torch

from compile_course import measurement as measure
from compile_course.stopwatch import Stopwatch, hooked
from course_grader.wire.payloads import Arg, ArgKind, Op, ReplayAnswerRequest, ReplayRequest, ServeReply, ServeRequest

from .allowlist.extract import TEST_DEFINITION_BUILTINS, load_checked, measured_namespace
from .allowlist.rules import for_cell
from .denied import REPLAY_DENIED
from .opaque import INPUT_SPEC, AnswerCode, binding_finder, node_kind


def setup_namespace(sources: list) -> dict:
    """A fresh namespace with the exercise's setup cells run in it, their printing discarded.
    (``course_grader.verdict.testcells`` builds the test cells' namespace with it too.)"""
    namespace: dict = {"__name__": "__course__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in sources:
            exec(compile(source, "<setup>", "exec"), namespace)  # noqa: S102 - the course's own setup cells
    return namespace


def _arg(a: Arg, namespace: dict, spies: list, allowed=None, watches: list | None = None):
    """One argument the test sent: data, a spy's stand-in (a plain closure), or a ``code`` expression.
    For a student's function (``allowed`` given) the expression runs in the function's own measured
    namespace, so what it builds reaches nothing the function could not name itself."""
    if a.kind is ArgKind.VALUE:
        return measure.from_data(a.value)
    if a.kind is ArgKind.ANSWER:
        return _ANSWER
    if a.kind is ArgKind.SPY:
        s = measure.Spy(namespace[a.value])
        spies.append(s)
        return s.stand_in
    if a.kind is ArgKind.STOPWATCH:
        w = Stopwatch(namespace[a.value])
        if watches is not None:
            watches.append(w)
        return w.stand_in
    scope = dict(namespace) if allowed is None else measured_namespace(namespace, allowed, TEST_DEFINITION_BUILTINS)
    for source in a.defs:
        exec(compile(source, "<given>", "exec"), scope)  # noqa: S102 - the test's own definitions
    return eval(a.value, scope)  # noqa: S307 - the test's own expression


MEASURED_FILE = "<measured>"   # the file name allowlist.load_checked compiles measured code under


def _measured_on_stack() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == MEASURED_FILE:
            return True
        frame = frame.f_back
    return False


def _measured_backend(backend, depth: int = 0) -> bool:
    """Whether a ``backend=`` that is not a name is measured code's: one of its functions or lambdas (or a
    method of one), a builtin method (``box.append``: it would hand the graph over), anything not of torch's
    or the course's making, or a torch/course backend wrapped around one of those (``CompileWatch(fn,
    backend=f)`` makes ``CompileCounterWithBackend(f)``, which keeps ``f`` as ``.backend``)."""
    if isinstance(backend, str) or depth > 3:
        return False
    code = getattr(getattr(backend, "__func__", backend), "__code__", None)
    if code is not None:
        return code.co_filename == MEASURED_FILE
    if type(backend).__module__.split(".")[0] not in ("torch", "compile_course"):
        return True
    inner = getattr(backend, "backend", None)
    return inner is not None and _measured_backend(inner, depth + 1)


@contextlib.contextmanager
def compile_guarded():
    """``torch.compile`` while measured code is on the stack: with a backend's name or the course's own
    backends (``new_compilations``' counter), never a function of measured code's, and without ``options``.
    A function backend is handed the torch.fx graph, whose nodes' targets become Python source that
    ``recompile()`` execs with the real builtins; inductor's ``options`` name the C++ compiler it runs
    (``{"cpp.cxx": "/bin/sh"}``) and passes that take callables. The grader's own compiles (a recording
    backend, no measured code on the stack) pass unchanged; ``torch.nn.Module.compile`` goes through it too."""
    real = torch.compile

    def guarded(model=None, **options):
        if _measured_on_stack():
            if _measured_backend(options.get("backend", "inductor")):
                raise TypeError("torch.compile(..., backend=...) takes a backend's name here (\"inductor\", "
                                "\"eager\", \"aot_eager\"), not a function: measured code may not handle "
                                "torch.fx graphs")
            if options.get("options") is not None:
                raise TypeError("torch.compile(..., options=...) is not allowed in measured code: its settings "
                                "name programs and passes inductor runs")
        if model is None:
            return lambda m: guarded(m, **options)
        return real(model, **options)

    torch.compile = functools.update_wrapper(guarded, real)
    try:
        yield
    finally:
        torch.compile = real


_ANSWER = object()   # where the answer's function goes among a setup function's arguments (``answer_fn``)


def _called(fn, caller, args: tuple) -> tuple:
    """``(the function to call, its arguments)``: the answer itself, or (``caller``: a setup function given
    ``answer_fn`` arguments) that setup function, with the answer as loaded now in place of each marker."""
    if caller is None:
        return fn, args
    return caller, tuple(fn if a is _ANSWER else a for a in args)


_THREADS: list[int] = []   # the thread count as it was at the first question, before any student code ran


def serve(payload: dict) -> dict:
    with compile_guarded():
        return _serve(payload)


def _serve(payload: dict) -> dict:
    request = ServeRequest.from_data(payload)   # before anything runs: a payload of another shape is refused
    # one child answers a submission's questions in turn: what an earlier question's code changed
    # globally is put back (the thread count, which a fixture could use as a counter, among others)
    if not _THREADS:
        _THREADS.append(torch.get_num_threads())
    torch.set_num_threads(_THREADS[0])
    namespace = setup_namespace(request.setup)
    name, function, options, op = request.name, request.function, request.options, request.op
    allowed = None
    if function is None:
        fn = namespace[name]
    else:
        allow = function.allow
        allowed = for_cell(allow.provided, allow.imports, allow.allow)
        try:
            fn = load_checked(function.source, name, allowed, namespace)
        except Exception as exc:  # noqa: BLE001 - reported as data
            return ServeReply(load_error=measure.error_text(exc)).to_data()
    caller = None
    if request.caller is not None:   # a setup function that holds the answer (``answer_fn``; checked by from_data)
        caller = namespace[request.caller]
    measure.restore_global_state()
    if op is Op.CALL:
        spies: list = []
        watches: list = []
        args = tuple(_arg(a, namespace, spies, allowed, watches) for a in request.args)
        with hooked(watches, args):   # before anything runs: the routine's tensors, kept as given
            if watches and function is not None:   # loaded under the hook: `from torch import compile` sees it
                fn = load_checked(function.source, name, allowed, namespace)
            result = measure.call_one(*_called(fn, caller, args), grad=options.grad)
        if spies:
            result.spied = [c for s in spies for c in s.records()]
        if watches:
            result.timeline = watches[0].timeline()
        return ServeReply(answer=result.to_data(), op=op).to_data()
    if op is Op.CALL_EACH:
        results = []
        for i, call in enumerate(request.args):
            measure.restore_global_state()
            watches = []
            args = tuple(_arg(a, namespace, [], allowed, watches) for a in call)
            with hooked(watches, args):
                if (i or watches) and function is not None:   # a fresh load: what a call left in a default is gone
                    fn = load_checked(function.source, name, allowed, namespace)
                result = measure.call_one(*_called(fn, caller, args), grad=options.grad)
            if watches:
                result.timeline = watches[0].timeline()
            results.append(result.to_data())
        return ServeReply(answer=results, op=op).to_data()
    if op is Op.COMPILE:
        calls = [tuple(_arg(a, namespace, [], allowed) for a in call) for call in request.args]
        # a nonstrict_trace node's function, named by the answer's binding that holds it (``opaque``)
        binding_of = binding_finder(fn) if function is not None else None
        runs = measure.compile_run(fn, calls, backend=options.backend, fullgraph=options.fullgraph,
                                   dynamic=options.dynamic, stance=options.stance, grad=options.grad,
                                   fresh=options.fresh, binding_of=binding_of)
        return ServeReply(answer=[r.to_data() for r in runs], op=op).to_data()
    args = tuple(_arg(a, namespace, [], allowed) for a in request.args)   # Op.TIME
    timing = measure.time_calls(fn, args, backend=options.backend, calls=options.calls)
    return ServeReply(answer=timing.to_data(), op=op).to_data()


ROOTS = {"torch": torch, "operator": operator, "_operator": operator, "math": math}
QUALIFIED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,8}")


def resolve(qualified: str):
    """The function a graph node's qualified target names, walking attributes from an allowed root; None
    if it is not one a replay runs (among them every target naming a part of torch in ``harness.denied``).
    The grader validates a graph with it (``graphcheck``); the replay resolves with it again."""
    if not QUALIFIED.fullmatch(qualified) or REPLAY_DENIED.search(qualified) or "__" in qualified:
        return None
    root, *rest = qualified.split(".")
    obj = ROOTS.get(root)
    for part in rest:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if callable(obj) and not isinstance(obj, type) else None


def _value(a, env: dict):
    if type(a) is dict:
        if "node" in a:
            return env[a["node"]]
        if "list" in a:
            return [_value(x, env) for x in a["list"]]
        if "tuple" in a:
            return tuple(_value(x, env) for x in a["tuple"])
        if "slice" in a:
            return slice(*(_value(x, env) for x in a["slice"]))
        if "ellipsis" in a:
            return Ellipsis
        if "device" in a:
            return torch.device(a["device"])
        if "memory_format" in a:
            return getattr(torch, a["memory_format"])
        if "layout" in a:
            return getattr(torch, a["layout"])
        if "kwargs" in a:
            return {k: _value(v, env) for k, v in a["kwargs"].items()}
    return measure.from_data(a)


def replay(payload: dict) -> dict:
    """Interpret validated graphs, each on its own arguments: ``{"results": [{"outputs", "grads", "error"}]}``."""
    request = ReplayRequest.from_data(payload)
    return {"results": [_replay_one(item.graph, item.args, request.params, request.grad) for item in request.items]}


def replay_answer(payload: dict) -> dict:
    """``replay`` for graphs that call the answer's own code (``opaque``): the setup cells run, the answer
    is loaded (allow-listed again), and each such node runs what the answer itself defined. Its own
    child: no question's code has run in it. ``{"load_error": ..., "results": [...]}``. The answer's code
    runs here too, so under the same ``compile_guarded`` as ``serve``."""
    with compile_guarded():
        return _replay_answer(payload)


def _replay_answer(payload: dict) -> dict:
    request = ReplayAnswerRequest.from_data(payload)
    namespace = setup_namespace(request.setup)
    allow = request.function.allow
    allowed = for_cell(allow.provided, allow.imports, allow.allow)
    try:
        answer = AnswerCode(load_checked(request.function.source, request.name, allowed, namespace).__globals__)
    except Exception as exc:  # noqa: BLE001 - reported as data
        return {"load_error": measure.error_text(exc), "results": None}
    measure.restore_global_state()
    return {"load_error": None,
            "results": [_replay_one(item.graph, item.args, request.params, request.grad, answer)
                        for item in request.items]}


def _replay_one(graph: dict, args_data: list, params: list, grad: bool, answer: AnswerCode | None = None) -> dict:
    import re

    args = [measure.from_data(a) for a in args_data]
    inputs = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad:
            a = a.detach().clone().requires_grad_(a.requires_grad)
            args[i] = a
            inputs.append(a)
    env: dict = {}
    outputs = None
    try:
        for node in graph["nodes"]:
            op, name, target = node["op"], node["name"], node["target"]
            if op == "placeholder":
                env[name] = args[params.index(re.fullmatch(r"L\['(\w+)'\]", node["source"]).group(1))]
            elif answer is not None and node_kind(node) is not None:
                if op == "get_attr" and INPUT_SPEC.fullmatch(target):
                    env[name] = node["spec"]
                elif op == "get_attr":
                    env[name] = answer.get_attr(target, node.get("binding"))
                else:
                    env[name] = answer.call(node)(*_value(node["args"], env), **_value(node["kwargs"], env))
            elif op == "call_function":
                fn = resolve(target)
                if fn is None:
                    raise ValueError(f"the graph calls {target[:60]!r}, which a replay does not run")
                env[name] = fn(*_value(node["args"], env), **_value(node["kwargs"], env))
            elif op == "call_method":
                self, *rest = _value(node["args"], env)
                env[name] = getattr(self, target)(*rest, **_value(node["kwargs"], env))
            elif op == "output":
                out = _value(node["args"], env)[0]
                outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    except Exception as exc:  # noqa: BLE001 - reported as data
        return {"outputs": None, "grads": None, "error": measure.error_text(exc)}
    tensors = [o for o in outputs or [] if isinstance(o, torch.Tensor)]
    grads = []
    for out in tensors:
        if grad and out.requires_grad and inputs:
            found = torch.autograd.grad(out, inputs, measure.upstream_gradient(out.detach()), allow_unused=True,
                                        retain_graph=True)
            grads.append([g.detach() if g is not None else None for g in found])
        else:
            grads.append(None)
    return {"outputs": measure.to_data([t.detach() for t in tensors]), "grads": measure.to_data(grads), "error": None}
