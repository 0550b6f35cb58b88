"""Graph nodes that call the student's own code: the three ways to keep an untraceable call in one graph.

Dynamo puts a call it does not trace into into the graph as one node (ex09):

* a ``torch.library.custom_op`` the answer defines: ``call_function`` of ``torch.ops.NS.NAME.OVERLOAD``;
* a ``torch.compiler.nonstrict_trace`` function (or ``torch._dynamo.nonstrict_trace``'s, its older name):
  two ``get_attr`` nodes (``FN_callable``, the function, and ``FN_input_spec``, the pytree layout of its
  arguments, sent as ``treespec_dumps`` text) and a ``call_function`` of Dynamo's ``flat_apply_capture`` on
  them and the flattened arguments. ``FN`` is the ``__name__`` of what ``nonstrict_trace`` returned, which
  is the wrapped function's: a ``def``'s name, ``<lambda>`` for a lambda, ``wrapped`` for a
  ``functools.partial``; a second call or a second function of the same name gets a suffix
  (``<lambda>_callable_0``);
* a ``torch.compiler.allow_in_graph`` function: ``call_function`` of ``__measured__.FN``.

``FN`` does not tell two functions of one name apart (two lambdas; two ``def salted`` made by one factory,
``SINGLE = make(); DOUBLE = make()``). The graph module itself holds the function, so the grader's
measuring child, which captured the graph, names it for the grader: the top-level name of the answer's
cell that holds that very object (:func:`binding_finder`, by identity), written on the ``FN_callable``
node as ``binding`` (``compile_course.measurement.graph_data``). It is the child's word, so data: the
grader accepts a plain identifier (:data:`BINDING`), and the re-run uses it only to choose among the
answer's own ``nonstrict_trace`` functions named ``FN`` (:meth:`AnswerCode.get_attr`).

Such a graph cannot be re-run without the student's code. The grader (``verdict.graphcheck``) accepts
these nodes only when the answer cell's ``allow`` list names the decorator, and has the graph re-run
with :class:`AnswerCode` in a sandboxed child of its own that loads the answer (allow-listed again) and
resolves each node to what the answer itself defined: the op of a ``CustomOpDef`` the answer holds, or
a function of the answer's own namespace (for a ``nonstrict_trace`` node, the ``nonstrict_trace`` function
named ``FN`` that the node's ``binding`` holds, else the one such function of the answer, whether a ``def``,
a lambda or a nested ``def``). The patterns are written here once, for both sides.

What it does not do: trust the answer. The re-run's results are compared by the grader with what the
student's child reported, and on new secret inputs with the test's reference; a ``binding`` the child
made up can only choose another of the answer's own ``nonstrict_trace`` functions of the same name, which
then has to give those results itself.
"""

from __future__ import annotations

import json
import re
import types

MEASURED_MODULE = "__measured__"   # the ``__name__`` of a measured namespace (``allowlist.measured_namespace``)

# the allow-list entries that let a graph call the answer's code, and the kind of node each one makes
ALLOW_KINDS = {"torch.library.custom_op": "custom_op", "torch.compiler.nonstrict_trace": "nonstrict_trace",
               "torch._dynamo.nonstrict_trace": "nonstrict_trace",
               "torch.compiler.allow_in_graph": "allow_in_graph", "torch._dynamo.allow_in_graph": "allow_in_graph"}
_IDENT = r"(?!__)[A-Za-z_][A-Za-z0-9_]{0,100}"
CUSTOM_OP = re.compile(r"torch\.ops\.([a-z][a-z0-9_]{0,60})\.([A-Za-z][A-Za-z0-9_]{0,100})"
                       r"\.([A-Za-z][A-Za-z0-9_]{0,40})")
TORCH_NAMESPACES = frozenset({"aten", "prims", "higher_order", "inductor", "profiler", "quantized", "rngprims",
                              "c10d", "debugprims", "mkldnn", "mkl", "onednn", "quantized_decomposed"})
FLAT_APPLY = "torch._dynamo.variables.torch.flat_apply_capture"
# the ``__name__`` torch puts before ``_callable``: an identifier, or a lambda's (Dynamo does not rename it)
_FN_NAME = rf"{_IDENT}?|<lambda>"
CALLABLE = re.compile(rf"({_FN_NAME})_callable(?:_\d{{1,3}})?")
INPUT_SPEC = re.compile(rf"({_FN_NAME})_input_spec(?:_\d{{1,3}})?")
ANSWER_FUNCTION = re.compile(rf"{re.escape(MEASURED_MODULE)}\.({_IDENT})")
# a ``FN_callable`` node's ``binding``: the top-level name of the answer's cell that holds the function
BINDING = re.compile(_IDENT)
MAX_SPEC_CHARS = 20_000
MAX_SPEC_NODES = 200
SPEC_TYPES = frozenset({None, "builtins.tuple", "builtins.list", "builtins.dict"})


def kinds_allowed(allow) -> frozenset[str]:
    """The kinds of answer-calling node a solution cell's ``allow`` list admits."""
    return frozenset(ALLOW_KINDS[a] for a in allow if a in ALLOW_KINDS)


def node_kind(node: dict) -> str | None:
    """``"custom_op"``, ``"nonstrict_trace"`` or ``"allow_in_graph"`` for a node (as ``graph_data`` writes it)
    that calls or names the answer's code; None for any other node."""
    op, target = node.get("op"), node.get("target")
    if type(target) is not str:
        return None
    if op == "call_function":
        found = CUSTOM_OP.fullmatch(target)
        if found and found.group(1) not in TORCH_NAMESPACES:
            return "custom_op"
        if target == FLAT_APPLY:
            return "nonstrict_trace"
        if ANSWER_FUNCTION.fullmatch(target):
            return "allow_in_graph"
    if op == "get_attr" and (CALLABLE.fullmatch(target) or INPUT_SPEC.fullmatch(target)):
        return "nonstrict_trace"
    return None


def spec_problem(text: object) -> str | None:
    """None when ``text`` is a ``treespec_dumps`` of plain tuples, lists and dicts of leaves."""
    if type(text) is not str or len(text) > MAX_SPEC_CHARS:
        return "an argument layout that is missing or too long"
    try:
        data = json.loads(text)
    except ValueError:
        return "an argument layout that is not JSON"
    if type(data) is not list or len(data) != 2 or type(data[1]) is not dict:
        return "an argument layout of an unexpected form"
    stack, count = [data[1]], 0
    while stack:
        spec = stack.pop()
        count += 1
        if count > MAX_SPEC_NODES or type(spec) is not dict or set(spec) != {"type", "context", "children_spec"}:
            return "an argument layout of an unexpected form"
        if spec["type"] not in SPEC_TYPES or type(spec["children_spec"]) is not list:
            return "an argument layout with other containers than tuples, lists and dicts"
        stack.extend(spec["children_spec"])
    return None


def leaf_function(value: object):
    """What ``nonstrict_trace`` returned, from the graph module's ``FN_callable`` attribute, or None.

    Dynamo (torch 2.14.1, ``TorchInGraphFunctionVariable._call_nonstrict_traceable_function``) stores
    ``_LeafCallable(patched_fn)``, ``patched_fn`` a closure that calls ``fn``, the function the answer called.
    Read from the closure's cell, so nothing of the answer runs; another form (another torch) gives None, and
    the re-run then looks for the function by its name, as before."""
    try:
        from torch._higher_order_ops.invoke_leaf_function import _LeafCallable
    except ImportError:
        return None

    inner = getattr(value, "_fn", None) if isinstance(value, _LeafCallable) else None
    if not isinstance(inner, types.FunctionType) or not inner.__closure__ or "fn" not in inner.__code__.co_freevars:
        return None
    code, closure = inner.__code__, inner.__closure__
    try:
        return closure[code.co_freevars.index("fn")].cell_contents
    except ValueError:   # an empty cell
        return None


def binding_finder(answer: object):
    """In the measuring child, for ``graph_data``'s ``binding_of``: the graph attribute's function ->
    the first top-level name of the answer's namespace (``answer.__globals__``, the one the re-run's
    :class:`AnswerCode` reads) bound to that very object (``is``), or None (a function held in a tuple or a
    dict, say: the re-run then looks for it by name). None when ``answer`` is no function of a measured
    namespace (a callable of torch's bound to the answer's name): nothing is named then."""
    scope = getattr(answer, "__globals__", None) if isinstance(answer, types.FunctionType) else None
    if type(scope) is not dict or scope.get("__name__") != MEASURED_MODULE:
        return None

    def binding_of(value: object) -> str | None:
        fn = leaf_function(value)
        if fn is None:
            return None
        return next((k for k, v in scope.items() if v is fn and type(k) is str and BINDING.fullmatch(k)), None)

    return binding_of


class AnswerCode:
    """In a replaying child, after the answer is loaded into ``scope``: the answer's objects for the nodes of
    :func:`node_kind`. A custom op node runs the op of a ``CustomOpDef`` the answer binds to a top-level
    name (``OP = make_op()``), never an op found by its name alone: that could be torch's."""

    def __init__(self, scope: dict):
        from torch._library.custom_ops import CustomOpDef  # what torch.library.custom_op returns

        self.scope = scope
        self.ops = {f"torch.ops.{v._namespace}.{v._name}": v for v in scope.values() if isinstance(v, CustomOpDef)}

    def _function(self, name: str):
        fn = self.scope.get(name)
        if not isinstance(fn, types.FunctionType):
            raise ValueError(f"the graph calls {name[:60]!r}, which is no function of the answer's cell")
        return fn

    def get_attr(self, target: str, binding: str | None = None):
        """``FN_callable``: the answer's function FN (:meth:`_nonstrict`; ``binding``, the node's, says which
        top-level name holds it); ``FN_input_spec``: a marker (the spec travels as data)."""
        found = CALLABLE.fullmatch(target)
        if found:
            return self._nonstrict(found.group(1), binding)
        raise ValueError(f"the graph reads {target[:60]!r}, which a replay does not provide")

    def _nonstrict(self, name: str, binding: str | None = None):
        """The function a ``FN_callable`` node reads. With the node's ``binding`` (the name the measuring child
        found it under): that top-level name of the answer's, which must hold a function that
        ``torch._dynamo.nonstrict_trace`` returned (it registers each with torch) with ``__name__`` ``name``;
        anything else is refused, never looked for another way. Without one (the function is held in a tuple,
        say): found as torch named it, the one such function of the answer's namespace whose ``__name__`` is
        ``name``, so a lambda or a nested ``def`` is found as a top-level ``def`` is; none such: the top-level
        function ``name`` (``nonstrict_trace(f)`` called inside the answer's function). Two such, and no
        binding: the graph does not say which node is which, so the re-run refuses, saying what would help."""
        from torch._dynamo.trace_rules import is_nonstrict_trace_callable

        def nonstrict(v) -> bool:
            return isinstance(v, types.FunctionType) and v.__name__ == name and is_nonstrict_trace_callable(v)

        if binding is not None:
            fn = self.scope.get(binding) if type(binding) is str and BINDING.fullmatch(binding) else None
            if not nonstrict(fn):
                raise ValueError(f"the answer's {str(binding)[:40]!r} is no nonstrict_trace function named "
                                 f"{name[:40]!r}")
            return fn
        found = {id(v): v for v in self.scope.values() if nonstrict(v)}
        if len(found) > 1:   # short: the grader shows 120 characters of a re-run's error
            raise ValueError(f"{len(found)} nonstrict_trace functions are named {name[:40]!r}: bind each to a "
                             "top-level name of its own")
        if found:
            return next(iter(found.values()))
        return self._function(name)

    def call(self, node: dict):
        """The callable a ``call_function`` node of :func:`node_kind` runs."""
        target = node["target"]
        kind = node_kind(node)
        if kind == "custom_op":
            packet, _, overload = target.rpartition(".")
            found = self.ops.get(packet)
            op = getattr(found._opoverload, "overloadpacket", None) if found is not None else None
            if op is None or overload not in op.overloads():
                raise ValueError(f"the graph calls {target[:80]!r}, which is no op of the answer's cell")
            return getattr(op, overload)
        if kind == "allow_in_graph":
            fn = self._function(ANSWER_FUNCTION.fullmatch(target).group(1))
            if fn.__globals__ is not self.scope:
                raise ValueError(f"{target[:60]!r} is not defined by the answer's cell")
            return fn
        if kind == "nonstrict_trace":
            return self._flat_apply
        raise ValueError(f"the graph calls {target[:60]!r}, which a replay does not run")

    def _flat_apply(self, fn, spec, *flat):
        """What Dynamo's ``flat_apply_capture`` does: call ``fn`` on the arguments rebuilt from ``spec``,
        and return its result flattened."""
        from torch.utils import _pytree as pytree

        args, kwargs = pytree.tree_unflatten(list(flat), pytree.treespec_loads(spec))
        return pytree.tree_flatten(fn(*args, **kwargs))[0]
