"""Writes into state measured code did not build: a subscript store, or a mutating method, on a module's object.

Attribute stores are refused everywhere (:mod:`.check`); this check refuses the other ways to change an
object: ``obj[k] = v`` (and ``+=``, and a ``for``/``with`` target), and a method that changes its object
(``.update``, ``.clear``, ``.pop``, ``.setdefault``, a tensor's in-place ``.add_``...), when ``obj`` is
*shared*: reached from a module (``torch._dynamo.utils.counters["inductor"]``), or an object the exercise
provides, or a local name, cell constant or helper's result that may hold one. What the function builds
itself (``x = torch.zeros(3)``, ``out = []``, ``dict(counters["inductor"])``) and its arguments stay its
own to change: ``x[0] = 1``, ``out.append(t)``.

Each expression gets a level: OWN (built here), HOLDS (a new container whose items may be shared:
``list(counters.values())``) or SHARED. Names take the highest level of every value bound to them; a
value that escapes into the function's own code (a shared argument of a nested function, a lambda or a
cell helper) makes that code's parameters shared. The analysis is by name, not by scope or type, so it
errs on the side of refusing; no honest sample or model answer writes into anything it did not build.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from course_grader.errors import AllowListError

# methods that change the object they are called on: containers (dict, Counter, list, set, deque) and modules
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add", "discard",
    "sort", "reverse", "subtract", "intersection_update", "difference_update", "symmetric_difference_update",
    "appendleft", "extendleft", "popleft", "rotate", "move_to_end",
    "train", "eval", "apply", "load_state_dict", "register_buffer", "register_parameter", "add_module",
    "zero_grad", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
})
COPYING_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "sorted"})   # a new container
ITEM_BUILTINS = frozenset({"iter", "next", "reversed", "enumerate", "zip", "filter", "map", "min", "max"})
# builtins that never call back into the function's own code with what they are given
PLAIN_BUILTINS = COPYING_BUILTINS | frozenset({
    "iter", "next", "reversed", "enumerate", "zip", "len", "str", "repr", "int", "float", "bool", "complex",
    "abs", "round", "sum", "isinstance", "print", "range", "any", "all", "divmod", "pow", "slice"})
_OPERATORS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.MatMult: "@=", ast.Div: "/=", ast.Mod: "%=",
              ast.Pow: "**=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitOr: "|=", ast.BitXor: "^=",
              ast.BitAnd: "&=", ast.FloorDiv: "//="}
FRESH_METHODS = frozenset({"clone"})    # a method of a shared object whose result is a new object


class Level(IntEnum):
    OWN = 0
    HOLDS = 1     # a container the function made, holding shared items
    SHARED = 2


@dataclass(frozen=True)
class Sharing:
    """What a checked function hands on: whether its result may be shared, and the cell helpers it gives
    shared values to (whose parameters are then shared when they are checked)."""

    returns: bool = False
    passes_to: frozenset[str] = frozenset()


def _line(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def _is_mutator(attr: str) -> bool:
    return attr in MUTATING_METHODS or (attr.endswith("_") and not attr.startswith("_"))


def check_writes(fn: ast.FunctionDef, label: str, *, is_module: Callable[[ast.AST], bool],
                 is_class: Callable[[ast.AST], bool],
                 local: set[str], provided: frozenset[str], helpers: frozenset[str], shared: frozenset[str],
                 shared_params: bool = False) -> Sharing:
    """Raise ``AllowListError`` for a write into shared state in ``fn``; say what ``fn`` hands on.

    ``is_module(node)``: the name or attribute chain is a module (``torch``, ``F`` for
    ``torch.nn.functional``); ``is_class(node)``: it is a class (``torch.Tensor``), whose method
    changes its first argument; ``local``: every name ``fn`` binds; ``provided``: the exercise's
    names; ``helpers``: the cell's top-level helpers and constants; ``shared``: those among them
    whose value or result may be shared; ``shared_params``: ``fn`` is a helper given shared values.
    """
    params = {a.arg for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.Lambda))
              for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs + [n.args.vararg, n.args.kwarg] if a}
    own_params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
                  + [fn.args.vararg, fn.args.kwarg] if a}
    imported: set[str] = set()    # names an `import` binds: modules, or what a module defines
    for node in ast.walk(fn):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    levels: dict[str, Level] = {n: Level.SHARED for n in imported}
    if shared_params:
        levels.update({n: Level.SHARED for n in own_params})
    escaped = [False]
    risen: list[str] = []     # the names whose level the last step raised
    passes_to: set[str] = set()

    def name_level(name: str) -> Level:
        if name in levels:
            return levels[name]
        if name in local:
            return Level.OWN
        if name in provided or name in shared:
            return Level.SHARED
        return Level.OWN

    def level(node: ast.AST | None) -> Level:
        if node is None or isinstance(node, (ast.Constant, ast.JoinedStr, ast.Compare, ast.UnaryOp)):
            return Level.OWN
        if isinstance(node, ast.Name):
            return Level.SHARED if is_module(node) else name_level(node.id)
        if isinstance(node, ast.Attribute):
            return Level.SHARED if is_module(node) or level(node.value) is Level.SHARED else level(node.value)
        if isinstance(node, ast.Subscript):
            return Level.SHARED if level(node.value) else Level.OWN
        if isinstance(node, ast.Call):
            return call_level(node)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.ListComp, ast.SetComp,
                             ast.GeneratorExp, ast.DictComp)):
            inner = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                inner = [node.elt]
            elif isinstance(node, ast.DictComp):
                inner = [node.value]
            return Level.HOLDS if any(level(c) for c in inner) else Level.OWN
        if isinstance(node, ast.Lambda):
            return level(node.body)
        if isinstance(node, (ast.IfExp, ast.BoolOp, ast.NamedExpr, ast.Starred)):
            values = {ast.IfExp: lambda n: [n.body, n.orelse], ast.BoolOp: lambda n: n.values,
                      ast.NamedExpr: lambda n: [n.value], ast.Starred: lambda n: [n.value]}[type(node)](node)
            return max((level(v) for v in values), default=Level.OWN)
        return Level.OWN

    def call_level(node: ast.Call) -> Level:
        args = [*node.args, *(k.value for k in node.keywords)]
        given = max((level(a) for a in args), default=Level.OWN)
        func = node.func
        if isinstance(func, ast.Attribute):
            if is_module(func.value):
                return Level.OWN                      # torch.zeros(...), torch.compile(fn)
            receiver = level(func.value)
            if receiver is Level.SHARED:
                return Level.OWN if func.attr in FRESH_METHODS else Level.SHARED
            if receiver is Level.HOLDS:
                return Level.SHARED                   # an item of a copy: `dict(counters).get("inductor")`
            return given                              # a method of its own object: `d.get(k, default)`
        if isinstance(func, ast.Name):
            if func.id in imported and func.id not in params:
                return Level.OWN                      # `from torch import zeros`: a module's function
            if func.id in COPYING_BUILTINS and func.id not in local:
                return Level.HOLDS if given else Level.OWN
            if func.id in ITEM_BUILTINS and func.id not in local:
                return Level.SHARED if given else Level.OWN
            if func.id in PLAIN_BUILTINS and func.id not in local:
                return Level.OWN
            if func.id in helpers and func.id not in local:
                return Level.SHARED if func.id in shared else Level.OWN
            if func.id in provided and func.id not in local:
                return Level.OWN                      # the exercise's own functions build their results
            return max(given, name_level(func.id))
        return max(given, level(func))

    def note_escapes(node: ast.Call) -> None:
        """A shared value handed to the function's own code (or to one that calls it back)."""
        args = [*node.args, *(k.value for k in node.keywords)]
        if not any(level(a) for a in args):
            return
        func = node.func
        if isinstance(func, ast.Attribute):
            if is_module(func.value):
                return
            if isinstance(func.value, ast.Name) and level(func.value) is Level.OWN:
                bind(func.value, Level.HOLDS)   # own.append(shared): it holds a shared value now
                if not any(isinstance(a, (ast.Name, ast.Lambda)) for a in args):
                    return
        elif isinstance(func, ast.Name) and func.id in PLAIN_BUILTINS and func.id not in local:
            return
        escaped[0] = True
        passes_to.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in helpers)

    def bind(target: ast.AST, value: Level) -> None:
        if isinstance(target, ast.Name):
            if value > levels.get(target.id, Level.OWN):
                levels[target.id] = value
                risen.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                bind(t, Level.SHARED if value else Level.OWN)
        elif isinstance(target, ast.Starred):
            bind(target.value, Level.HOLDS if value else Level.OWN)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                        and len(target.elts) == len(node.value.elts):
                    for t, v in zip(target.elts, node.value.elts, strict=True):
                        bind(t, level(v))
                else:
                    bind(target, level(node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            bind(node.target, level(node.value))
        elif isinstance(node, (ast.For, ast.comprehension)):
            bind(node.target, Level.SHARED if level(node.iter) else Level.OWN)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, level(node.context_expr))
        elif isinstance(node, ast.Call):
            note_escapes(node)
        elif isinstance(node, ast.Return) and node.value is not None and id(node) in owner:
            bind(ast.Name(owner[id(node)]), Level.SHARED if level(node.value) else Level.OWN)
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args
            defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            nested = node is not fn
            if any(level(d) for d in defaults) or (nested and escaped[0]):
                for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                    if a is not None:
                        bind(ast.Name(a.arg), Level.SHARED)

    # To a fixed point, by a work list: levels only grow, and a step is done again only when a name it
    # reads has risen (or, for parameters, when a value first escaped), so a long chain of aliases in any
    # order costs no more than its length.
    owner: dict[int, str] = {}    # a nested def's `return`: the def's name is shared if what it returns is
    for node in ast.walk(fn):
        if isinstance(node, ast.FunctionDef) and node is not fn:
            owner.update({id(r): node.name for r in ast.walk(node) if isinstance(r, ast.Return)})
    steps = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr,
                                                       ast.For, ast.comprehension, ast.withitem, ast.Call,
                                                       ast.Return, ast.FunctionDef, ast.Lambda))]
    readers: dict[str, list[ast.AST]] = {}
    for step in steps:
        read = step.args if isinstance(step, (ast.FunctionDef, ast.Lambda)) else \
            step.iter if isinstance(step, (ast.For, ast.comprehension)) else step
        for name in {n.id for n in ast.walk(read) if isinstance(n, ast.Name)}:
            readers.setdefault(name, []).append(step)
    signatures = [s for s in steps if isinstance(s, (ast.FunctionDef, ast.Lambda))]
    work, queued = list(reversed(steps)), {id(s) for s in steps}
    while work:
        step = work.pop()
        queued.discard(id(step))
        was_escaped = escaped[0]
        risen.clear()
        visit(step)
        again = [r for n in risen for r in readers.get(n, ())]
        if escaped[0] and not was_escaped:
            again += signatures
        for r in again:
            if id(r) not in queued:
                queued.add(id(r))
                work.append(r)

    parents = {id(child): node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) \
                and level(node.value) is Level.SHARED:
            raise AllowListError(
                f"{label} {_line(node)}: writing into `{ast.unparse(node.value)}[...]` is not allowed: measured "
                "code may change only objects it built itself (`x = torch.zeros(3); x[0] = 1`, a list or dict it "
                "made) or was given as arguments, never what a module or the exercise holds")
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                and levels.get(node.target.id) is Level.SHARED:
            raise AllowListError(
                f"{label} {_line(node)}: `{node.target.id} {_OPERATORS.get(type(node.op), '?=')} ...` is not allowed: "
                f"`{node.target.id}` may be an object a module or the exercise holds, which `+=`, `|=` and the like "
                f"change in place; work on a copy of your own (`{node.target.id} = int(...)`, `dict(...)`, "
                "`.clone()`)")
        if isinstance(node, ast.Attribute) and _is_mutator(node.attr):
            changed = node.value
            if is_class(node.value) or isinstance(node.value, ast.Name) and node.value.id not in local \
                    and isinstance(getattr(builtins, node.value.id, None), type):
                # `dict.update(d, ...)`, `torch.Tensor.add_(t, 1)`: the method changes its first argument
                call = parents.get(id(node))
                first = call.args[0] if isinstance(call, ast.Call) and call.func is node and call.args else None
                if first is not None and not isinstance(first, ast.Starred):
                    changed = first
                else:
                    raise AllowListError(f"{label} {_line(node)}: `{ast.unparse(node)}` is allowed only called on "
                                         "an object of your own (`d.update(...)`)")
            if level(changed) is Level.SHARED:
                raise AllowListError(
                    f"{label} {_line(node)}: `{ast.unparse(node)}` is not allowed: it changes "
                    f"`{ast.unparse(changed)}`, and measured code may change only objects it built itself or was "
                    "given as arguments, never what a module or the exercise holds")
    returned = max((level(r.value) for r in ast.walk(fn) if isinstance(r, ast.Return)), default=Level.OWN)
    return Sharing(returns=bool(returned), passes_to=frozenset(passes_to))
