"""A graph Dynamo captured, as data: its nodes, their targets and arguments, and what each input is bound to.

``compile_run``'s recording backend describes every graph it receives with :func:`graph_data`, so a
test reads a graph as an op list, and the grader can validate one and re-run it without the student's
code (``course_grader.verdict.graphcheck``). Not here: running or compiling anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .codec import ReplyError, to_data


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


def graph_data(gm: torch.fx.GraphModule, binding_of: Callable[[Any], str | None] | None = None) -> dict:
    """One captured graph as data: its nodes (op, name, target's qualified name, args, kwargs), for
    each placeholder the source dynamo bound it to (``L['x']``), and for a ``get_attr`` of a pytree
    spec (a ``nonstrict_trace`` call's argument layout) the spec as ``treespec_dumps`` text.

    ``binding_of`` (given by the grader's measuring child) names what another ``get_attr`` reads: for
    a ``nonstrict_trace`` call's function, the name the answer binds it to
    (``course_grader.harness.opaque.binding_finder``), written as ``binding``; None: nothing written."""
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
            elif binding_of is not None and value is not None:
                binding = binding_of(value)
                if binding is not None:
                    entry["binding"] = binding
        if n.op == "placeholder":
            arg = n.meta.get("grapharg")
            source = getattr(arg, "source", None)
            name = getattr(source, "name", None)
            entry["source"] = (name() if callable(name) else name) if source is not None else None
        nodes.append(entry)
    return {"nodes": nodes}
