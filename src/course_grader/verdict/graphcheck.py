"""A captured graph, reported as data by a child that ran student code: validated here, then judged
against a re-run of it in a child that runs no student code.

``validate`` accepts only what a Dynamo graph of tensor code holds: placeholders bound to the
function's arguments, calls of torch functions and ``operator`` functions, tensor methods, and an
output; arguments are node references and plain data. Where the answer cell allows it, also the nodes
that call the answer's own code (``course_grader.harness.opaque``): such a graph is re-run in a child
that loads the answer, every other graph in one that runs no student code. ``disagreement`` compares the re-run's
outputs and gradients with what the child reported for the call.

Not accepted: a higher-order operator (``torch.cond``, ``while_loop``), whose branches are subgraphs read by
``get_attr`` nodes. A replay would have to rebuild and run graphs the child sent, and ``harness.denied``
refuses ``ops.higher_order`` in a replay; such a graph is refused with :data:`HIGHER_ORDER`, which says so.
A ``get_attr`` node in a graph with no higher-order operator, and none of the answer's (``opaque``), is
refused with what it reads, not with :data:`HIGHER_ORDER`: the graph holds no such operator.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from compile_course import measurement as measure
from compile_course.measurement import CallResult, ReplyError
from course_grader.harness import opaque
from course_grader.harness.child import resolve

MAX_NODES = 2_000
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}")
SOURCE = re.compile(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]")
# Tensor methods a ``call_method`` node may not call: hooks, in-place storage changes, leaving the CPU, reading
# values out to Python as containers. ``item`` is not one: a graph captured with ``fullgraph=True`` (or
# ``capture_scalar_outputs``) holds it, its number an unbacked size of later nodes (ex10), and a replay
# runs no student code whatever number it reads. Names of methods, whatever the tensor; the parts of torch a
# ``call_function`` node may not name are another list, ``harness.denied`` (read by ``child.resolve``).
DENIED_METHODS = frozenset({"register_hook", "register_post_accumulate_grad_hook", "apply_", "map_", "map2_",
                            "backward", "retain_grad", "share_memory_", "pin_memory", "cuda", "to_sparse",
                            "untyped_storage", "storage", "set_", "resize_", "data_ptr", "tolist", "numpy",
                            "__reduce_ex__", "__setstate__"})
# What a student reads when the graph holds a higher-order operator (torch.cond, while_loop, ...): its branches
# are graphs of their own (``get_attr`` nodes), which a replay does not rebuild, and ``harness.denied`` refuses
# ``ops.higher_order`` in a replay. Said in the words of the exercise, not of the graph's nodes.
HIGHER_ORDER = ("it uses torch.cond or another higher-order operator, whose branches are graphs of their own: "
                "the grader re-runs only graphs of tensor operations, so it cannot check this one; "
                "write the branch with tensor operations (torch.where, say)")
HIGHER_ORDER_TARGET = re.compile(r"torch\.ops\.higher_order\.")
# no "tensor": a graph Dynamo captures from a function of its arguments holds no tensor constants
ARG_KEYS = frozenset({"node", "list", "tuple", "slice", "ellipsis", "device", "memory_format", "layout", "kwargs",
                      "float", "dtype", "dict", "object"})


def _check_arg(a: Any, known: set[str], depth: int = 0) -> str | None:
    if depth > 8:
        return "an argument is nested too deeply"
    if a is None or type(a) in (bool, int, float, str):
        return None if type(a) is not str or len(a) < 200 else "a text argument is too long"
    if type(a) is not dict or not a or not set(a) <= ARG_KEYS:
        return "an argument of an unexpected form"
    if "node" in a:
        return None if a["node"] in known else "an argument refers to a node not defined before it"
    for key in ("list", "tuple"):
        if key in a:
            items = a[key]
            if type(items) is not list or len(items) > 64:
                return "a list argument is malformed"
            return next((p for p in (_check_arg(x, known, depth + 1) for x in items) if p), None)
    if "slice" in a:
        parts = a["slice"]
        if type(parts) is not list or len(parts) != 3:
            return "a slice argument is malformed"
        return next((p for p in (_check_arg(x, known, depth + 1) for x in parts) if p), None)
    if "kwargs" in a:
        inner = a["kwargs"]
        if type(inner) is not dict or not all(NAME.fullmatch(k) for k in inner):
            return "keyword arguments are malformed"
        return next((p for p in (_check_arg(x, known, depth + 1) for x in inner.values()) if p), None)
    if "device" in a:
        return None if a["device"] == "cpu" else "a device other than the CPU"
    if "memory_format" in a:
        return None if a["memory_format"] in ("contiguous_format", "preserve_format") else "a memory format"
    if "layout" in a:
        return None if a["layout"] == "strided" else "a layout other than strided"
    if "ellipsis" in a:
        return None
    try:
        measure.from_data(a)
    except (ReplyError, RecursionError, ValueError):
        return "a constant argument that is not plain data"
    if "object" in a:
        return "an argument that is not plain data"
    return None


def validate(graph: Any, answer_kinds: frozenset[str] = frozenset()) -> str | None:
    """None when ``graph`` can be replayed; otherwise what is wrong with it.

    ``answer_kinds`` (``harness.opaque.kinds_allowed`` of the answer cell's ``allow`` list) admits the
    nodes that call the answer's own code (a custom op, a ``nonstrict_trace`` or ``allow_in_graph``
    function); a graph with one is re-run with the answer loaded (:func:`calls_answer`)."""
    if type(graph) is not dict or set(graph) != {"nodes"} or type(graph["nodes"]) is not list:
        return "it is not a graph"
    nodes = graph["nodes"]
    if not 2 <= len(nodes) <= MAX_NODES:
        return "it has no operations or too many"
    known: set[str] = set()
    attrs: dict[str, tuple[str, str]] = {}   # get_attr node -> ("callable" or "spec", the function's name)
    outputs = 0
    for n in nodes:
        if type(n) is not dict or not {"op", "name", "target", "args", "kwargs"} <= set(n) <= \
                {"op", "name", "target", "args", "kwargs", "source", "spec", "binding"}:
            return "a node is malformed"
        op, name, target = n["op"], n["name"], n["target"]
        if type(name) is not str or not NAME.fullmatch(name) or name in known or type(target) is not str:
            return "a node's name is malformed or repeated"
        kind = opaque.node_kind(n)
        if kind is not None:
            if kind not in answer_kinds:
                return f"it calls {target[:60]!r}, the answer's own code, which the cell's allow list does not name"
            problem = _answer_node(n, attrs)
            if problem:
                return problem
        elif "spec" in n or "binding" in n:
            return "a node is malformed"
        elif op == "placeholder":
            if type(n.get("source")) is not str or not SOURCE.fullmatch(n["source"]):
                return "an input that is not one of the function's arguments"
        elif op == "call_function" and HIGHER_ORDER_TARGET.match(target):
            return HIGHER_ORDER
        elif op == "get_attr":
            return HIGHER_ORDER if any(_higher_order(m) for m in nodes) else \
                f"it reads {target[:60]!r} from the graph, which is no nonstrict_trace function or layout the " \
                "grader can name, and which a replay does not provide"
        elif op == "call_function":
            if resolve(target) is None:
                return f"it calls {target[:60]!r}, which a replay does not run"
        elif op == "call_method":
            if not NAME.fullmatch(target) or target in DENIED_METHODS or (target.startswith("_")
                                                                         and not target.startswith("__")):
                return f"it calls the method {target[:60]!r}, which a replay does not run"
        elif op == "output":
            outputs += 1
        else:
            return f"a node of kind {str(op)[:30]!r}, which a replay does not run"
        problem = _check_arg(n["args"], known) or _check_arg(n["kwargs"], known)
        if problem:
            return problem
        known.add(name)
    return None if outputs == 1 and nodes[-1]["op"] == "output" else "it does not end in one output"


def _higher_order(n: Any) -> bool:
    return type(n) is dict and n.get("op") == "call_function" and type(n.get("target")) is str \
        and HIGHER_ORDER_TARGET.match(n["target"]) is not None


def _answer_node(n: dict, attrs: dict[str, tuple[str, str]]) -> str | None:
    """Check one node of ``harness.opaque.node_kind``: a ``nonstrict_trace`` call's ``flat_apply`` takes
    the function and the argument layout of one function, read just before by ``get_attr`` nodes. The
    function's node may say which top-level name of the answer holds it (``binding``, the child's word):
    a plain identifier, which the re-run looks up among the answer's own ``nonstrict_trace`` functions."""
    op, target = n["op"], n["target"]
    if op == "get_attr":
        if n["args"] != {"tuple": []} or n["kwargs"] != {"kwargs": {}}:
            return "a node is malformed"
        found = opaque.CALLABLE.fullmatch(target)
        if found:
            if "spec" in n:
                return "a node is malformed"
            if "binding" in n and (type(n["binding"]) is not str or not opaque.BINDING.fullmatch(n["binding"])):
                return "it names the answer's nonstrict_trace function by something other than a plain name"
            attrs[n["name"]] = ("callable", found.group(1))
            return None
        if "binding" in n:
            return "a node is malformed"
        problem = opaque.spec_problem(n.get("spec"))
        if problem:
            return f"it passes {problem}"
        attrs[n["name"]] = ("spec", opaque.INPUT_SPEC.fullmatch(target).group(1))
        return None
    if "spec" in n or "binding" in n:
        return "a node is malformed"
    if target == opaque.FLAT_APPLY:
        items = n["args"].get("tuple") if type(n["args"]) is dict else None
        if type(items) is not list or len(items) < 2 or n["kwargs"] != {"kwargs": {}} \
                or not all(type(a) is dict and set(a) == {"node"} for a in items[:2]):
            return "a nonstrict_trace call of an unexpected form"
        first, second = attrs.get(items[0]["node"]), attrs.get(items[1]["node"])
        if first is None or second is None or first[0] != "callable" or second[0] != "spec" or first[1] != second[1]:
            return "a nonstrict_trace call of an unexpected form"
    return None


def calls_answer(graph: dict) -> bool:
    """Whether a validated graph calls the answer's own code (and so is re-run with the answer loaded)."""
    return any(opaque.node_kind(n) is not None for n in graph["nodes"])


def _same(a: Any, b: Any) -> bool:
    """Exactly the same tensor: dtype, shape, values, NaN places and signs of zero."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not (a.is_floating_point() or a.is_complex()):
        return bool(torch.equal(a, b))
    nan = torch.isnan(a)
    return bool(torch.equal(nan, torch.isnan(b)) and torch.equal(a[~nan], b[~nan])
                and torch.equal(torch.signbit(a[~nan]), torch.signbit(b[~nan])))


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True))


def _replayed(reply: Any) -> tuple[list, list] | str:
    """A replay's ``(outputs, gradients)``, read by the one validation; or why it cannot be read."""
    if type(reply) is not dict or set(reply) != {"outputs", "grads", "error"}:
        return "gave no readable result"
    if reply["error"] is not None:
        return f"failed ({str(reply['error'])[:120]})"
    try:
        outputs = measure.from_data(reply["outputs"])
        grads = measure.from_data(reply["grads"])
    except (ReplyError, RecursionError, ValueError) as exc:
        return f"gave no readable result ({exc})"
    if type(outputs) is not list or type(grads) is not list or len(grads) != len(outputs):
        return "gave no readable result"
    return outputs, grads


def disagreement(reply: Any, reported: CallResult, grad: bool) -> str | None:
    """None when the replay's outputs include the reported output (and, with ``grad``, its gradients)."""
    replayed = _replayed(reply)
    if isinstance(replayed, str):
        return replayed
    outputs, grads = replayed
    for out, out_grads in zip(outputs, grads, strict=True):
        if _same(out, reported.value):
            if not grad:
                return None
            wanted = reported.grads or []
            if type(out_grads) is list and len(out_grads) == len(wanted) and all(
                    _close(g, w) for g, w in zip(out_grads, wanted, strict=True)):
                return None
            return "gives the reported output but other gradients"
    return "does not give the output that was reported"


def secret_generator() -> torch.Generator:
    """Random values no child can predict: a generator seeded from the operating system."""
    import secrets

    return torch.Generator().manual_seed(secrets.randbits(62))


def new_inputs(args: tuple, rng: torch.Generator) -> tuple:
    """Arguments like ``args`` (same shapes, dtypes and ``requires_grad``) with new random values."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            if a.is_floating_point():
                t = (2 * torch.randn(a.shape, generator=rng, dtype=torch.float64)).to(a.dtype)
            elif a.dtype is torch.bool:
                t = torch.rand(a.shape, generator=rng) > 0.5
            else:
                t = torch.randint(-5, 6, a.shape, generator=rng).to(a.dtype)
            out.append(t.requires_grad_(a.requires_grad))
        else:
            out.append(a)
    return tuple(out)


def fresh_copies(args: tuple) -> tuple:
    return tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                 for a in args)


def disagreement_with_reference(reply: Any, expected: CallResult, grad: bool) -> str | None:
    """None when the replay's outputs include one that agrees with the reference's (the course's
    comparison rules: ``compile_course.comparison.compare_tensors``), gradients too with ``grad``."""
    from compile_course.comparison import compare_tensors

    replayed = _replayed(reply)
    if isinstance(replayed, str):
        return replayed
    outputs, grads = replayed
    if not isinstance(expected.value, torch.Tensor):
        return "gave no readable result"
    for out, out_grads in zip(outputs, grads, strict=True):
        if not isinstance(out, torch.Tensor) or not compare_tensors(expected.value, out).ok:
            continue
        if not grad:
            return None
        wanted = expected.grads or []
        if type(out_grads) is list and len(out_grads) == len(wanted) and all(
                (w is None and g is None) or (w is not None and g is not None
                                              and compare_tensors(w, g, signed_zeros=False).ok)
                for g, w in zip(out_grads, wanted, strict=True)):
            return None
        return "gives other gradients"
    return "gives other values"
