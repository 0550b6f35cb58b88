"""The allow-list for student code that a measuring process will run.

It lives in ``course_grader.harness`` because both sides use it: the trusted side
(``course_grader.verdict``, ``intake``, ``exercise.answers``) before anything is sent, and the measuring
process, where only ``course_grader.harness`` is importable, again before it runs
the code.

A measured answer (ex01's rewrite, ex03's warm-up, ex04's fixture, ex05's timing
function) reaches a sandboxed measuring process only as the source of one
function that passes :func:`check_function`. It is an allow-list: a construct
is accepted because it is listed here, never because nobody thought to forbid
it.

Accepted: the node types in ``ALLOWED_NODES``; names that are the function's
own parameters and locals, the exercise's provided names, the builtins in
``SAFE_BUILTINS``, and the cell's own top-level helper functions and constants
(whose expressions pass the same check). Attribute *loads* whose names do not
start with ``_``, plus the exact dotted paths an exercise lists
(``torch._dynamo.reset``).

Every attribute chain rooted at a provided module (``torch``, ``nn``, ``time``,
``copy``) is resolved over the real attributes, in the grader and again in the
measuring process: each step must be a module under that root, or something
that root's modules define; ``torch.os``, ``torch.sys``, ``torch.builtins`` and
the like are other modules and are rejected. A module may only start a longer
chain or be given a plain local name; passed anywhere else it could not be checked.

Rejected, each with a message a student can act on: attribute stores and
deletes, ``_``/dunder attribute access outside the listed paths, ``.format``
(string formatting can read attributes by name), the frame, generator and code
attributes that have no ``_`` (``gi_frame``, ``f_back``, ``f_globals``...), the torch.fx graph
surgery and code generation a callable ``backend=`` is handed (``.graph``, ``.recompile``,
``.call_method``...), names of the introspection and I/O builtins (``getattr``, ``eval``,
``open`` ...), imports other than the listed modules, ``global``/``nonlocal``, decorators, classes (unless allowed),
generators and ``async``, oversized or overly deep code.

What it does not do: decide whether the code is *right*, or stop it from using
CPU or memory. The harness measures it, the sandbox limits it, and the trusted
side judges the data it returns.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .parsing import parse

MAX_SOURCE_CHARS = 1_000_000   # comments count here and cost nothing later; the node and depth limits bound the code
MAX_NODES = 6_000
MAX_DEPTH = 60
MAX_CONSTANT_CHARS = 5_000

SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
    "isinstance", "iter", "len", "list", "map", "max", "min", "next", "pow", "print", "range", "repr",
    "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip",
    "ArithmeticError", "AssertionError", "Exception", "IndexError", "KeyError", "NotImplementedError",
    "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError",
})

# Named in messages because they are the usual ways around an allow-list.
FORBIDDEN_NAMES = frozenset({
    "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars", "dir", "exec", "eval",
    "compile", "__import__", "open", "input", "breakpoint", "type", "object", "super", "memoryview",
    "classmethod", "staticmethod", "property", "id", "help", "exit", "quit", "__builtins__",
})
FORBIDDEN_ATTRIBUTES = frozenset({"format", "format_map"})  # "{0._x}".format(obj) reads attributes by name
# Attributes without a `_` that lead from a running generator, coroutine, traceback or frame to frames, code and
# globals: `(g.gi_frame.f_back.f_globals for _ in [0])` reaches the module that called the measured function,
# with its real builtins and every module. No exercise needs them.
FRAME_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_suspended", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins",
    "f_code", "f_trace", "co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
})
# The torch.fx graph a callable `torch.compile(..., backend=f)` (or an inductor pass in `options=`) is handed:
# its nodes' names and targets are pasted into Python source that `recompile()` execs with the real builtins
# (`g.call_method('x", 0) or __import__("os")... or ("', ...)`), so measured code may not build, change or
# regenerate one. No exercise needs them.
FX_ATTRIBUTES = frozenset({
    "graph", "owning_module", "recompile", "python_code", "create_node", "placeholder", "call_method",
    "call_module", "call_function", "get_attr", "inserting_before", "inserting_after", "node_copy", "graph_copy",
    "add_submodule", "to_folder", "on_generate_code", "set_codegen",
})

ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Lambda, ast.Return, ast.Pass, ast.Expr,
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.While, ast.If, ast.Break,
    ast.Continue, ast.With, ast.withitem, ast.Try, ast.ExceptHandler, ast.Raise, ast.Assert,
    ast.Import, ast.ImportFrom, ast.alias,
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Attribute, ast.Subscript, ast.Slice, ast.Name, ast.Constant, ast.Starred,
    ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr, ast.FormattedValue,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension,
    ast.Load, ast.Store,
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.MatMult, ast.Div, ast.Mod, ast.Pow, ast.LShift,
    ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.FloorDiv, ast.Invert, ast.Not, ast.UAdd,
    ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
)
_NODE_NAMES = {
    ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
    ast.ClassDef: "a class definition", ast.AsyncFunctionDef: "`async def`", ast.Await: "`await`",
    ast.Yield: "`yield`", ast.YieldFrom: "`yield from`", ast.Delete: "`del`", ast.Match: "`match`",
    ast.AsyncFor: "`async for`", ast.AsyncWith: "`async with`",
}




class AllowListError(ValueError):
    """The code is not allowed in a measuring process; the text says where and why."""


@dataclass(frozen=True)
class AllowList:
    """What one exercise's measured function may use, beyond the safe core."""

    provided: frozenset[str] = frozenset()   # names the harness supplies (torch, nn, Case, ...)
    dotted: frozenset[str] = frozenset()     # exact dotted paths allowed despite "_" ("torch._dynamo.reset")
    imports: frozenset[str] = frozenset()    # modules that `import` may name inside the function
    classes: bool = False                    # nested class definitions
    builtins: frozenset[str] = field(default=SAFE_BUILTINS)

    def names(self) -> frozenset[str]:
        return self.provided | self.builtins

    def module_roots(self) -> dict[str, str]:
        """The provided or importable names that are modules, with the module each one names."""
        return {n: MODULE_PATHS[n] for n in sorted(self.provided | self.imports) if n in MODULE_PATHS}


def for_cell(provided, imports, allow) -> AllowList:
    """A solution cell's allow-list: the names the exercise provides, the modules `import` may name, and
    the cell's ``allow`` entries (dotted names such as ``torch._dynamo.mark_dynamic``; builtin names).
    The grader builds it from the exercise, the measuring child again from what the grader sent."""
    return AllowList(provided=frozenset(provided), imports=frozenset(imports),
                     dotted=frozenset(a for a in allow if "." in a),
                     builtins=SAFE_BUILTINS | frozenset(a for a in allow if "." not in a))


# Provided names that are modules, and the module each names. Every attribute chain rooted at
# one of them is resolved by walking the real attributes (see ``_resolve_chain``).
MODULE_PATHS = {"torch": "torch", "nn": "torch.nn", "time": "time", "copy": "copy"}
_PRIMITIVES = (bool, int, float, complex, str, bytes, type(None))
# Parts of torch itself that load code, touch files or start processes: no exercise needs them.
DENIED_PATHS = ("torch.hub", "torch.load", "torch.save", "torch.serialization", "torch.package",
                "torch.utils", "torch.ops.load_library", "torch.classes", "torch.multiprocessing",
                "torch.distributed", "torch.cuda",
                # introspection and code generation: getattr by string (torch.ao...getattr_from_fqn),
                # graph and module surgery, overrides of torch functions, code loading and export
                "torch.ao", "torch.fx", "torch.overrides", "torch.jit", "torch.export", "torch.onnx",
                "torch.library", "torch.profiler",
                "torch.monitor", "torch.storage", "torch.autograd.graph", "torch.autograd.forward_ad",
                # compiled code and cache entries loaded from bytes or files, a default backend that may be a
                # function (see harness.child.compile_guarded), compiler settings, files read and written
                "torch.compiler.load_cache_artifacts", "torch.compiler.save_cache_artifacts",
                "torch.compiler.load_compiled_function", "torch.compiler.precompile",
                "torch.compiler.set_default_backend", "torch.compiler.config", "torch.from_file",
                "torch.PyTorchFileReader", "torch.PyTorchFileWriter")
# A solution cell's ``allow`` list may name one exact path below a denied part (ex09 allows
# ``torch.library.custom_op``): that path, and the steps leading to it, are then resolved as usual.


# ---------------------------------------------------------------- parsing

def strip_magics(code: str) -> str:
    """IPython magics and shell escapes (``%time``, ``!ls``) are not Python: each such line becomes ``pass``."""
    lines = []
    for line in code.splitlines():
        s = line.lstrip()
        lines.append(line[: len(line) - len(s)] + "pass" if s.startswith(("%", "!")) else line)
    return "\n".join(lines)


def parse_source(source: str, where: str) -> ast.Module:
    """``ast.parse`` with a size limit; every failure becomes an ``AllowListError``-like message."""
    if not isinstance(source, str):
        raise AllowListError(f"{where}: the cell has no text")
    if len(source) > MAX_SOURCE_CHARS:
        raise AllowListError(f"{where}: the cell is longer than {MAX_SOURCE_CHARS} characters")
    try:
        return parse(strip_magics(source))
    except SyntaxError as exc:
        raise AllowListError(f"{where}: syntax error on line {exc.lineno}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise AllowListError(f"{where}: the cell cannot be parsed (nested too deeply, or too large)") from None


def _depth_and_size(tree: ast.AST, where: str) -> None:
    count, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise AllowListError(f"{where}: the code has more than {MAX_NODES} syntax nodes")
        if depth > MAX_DEPTH:
            raise AllowListError(f"{where}: the code is nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


# ---------------------------------------------------------------- the check

def _chain(node: ast.Attribute) -> tuple[str | None, list[str]]:
    """``("torch", ["_dynamo", "reset"])`` for ``torch._dynamo.reset``; the base is None if not a plain name."""
    attrs: list[str] = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        attrs.append(current.attr)
        current = current.value
    return (current.id if isinstance(current, ast.Name) else None), attrs[::-1]


def _bound_names(fn: ast.AST) -> set[str]:
    """Every name the function binds anywhere inside it (parameters, assignments, loops, imports...)."""
    bound: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not fn:
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound


def _line(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def check_function(fn: ast.FunctionDef, allowed: AllowList, extra_names: frozenset[str] = frozenset(),
                   where: str = "your function") -> None:
    """Raise ``AllowListError`` for the first construct of ``fn`` that is not allowed."""
    label = f"{where}: `{fn.name}`"
    _depth_and_size(fn, label)
    if fn.decorator_list:
        raise AllowListError(f"{label} {_line(fn)}: decorators are not allowed on measured functions")
    known = _bound_names(fn) | allowed.names() | extra_names | {fn.name}
    allowed_paths = [p.split(".") for p in allowed.dotted]
    inner = {id(n.value) for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)}
    for node in ast.walk(fn):
        kind = type(node)
        if kind is ast.ClassDef and allowed.classes:
            if node.decorator_list or node.keywords:
                raise AllowListError(f"{label} {_line(node)}: class decorators and keywords are not allowed")
        elif not isinstance(node, ALLOWED_NODES):
            what = _NODE_NAMES.get(kind, f"`{kind.__name__}`")
            raise AllowListError(f"{label} {_line(node)}: {what} is not allowed in measured code")
        if isinstance(node, ast.FunctionDef) and node is not fn and node.decorator_list:
            raise AllowListError(f"{label} {_line(node)}: decorators are not allowed")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in allowed.imports:
                    names = ", ".join(sorted(allowed.imports)) or "none"
                    raise AllowListError(f"{label} {_line(node)}: `import {alias.name}` is not allowed "
                                         f"(modules you may import here: {names})")
        elif isinstance(node, ast.ImportFrom):
            names = ", ".join(sorted(allowed.imports)) or "none"
            if node.level or node.module not in allowed.imports:
                raise AllowListError(f"{label} {_line(node)}: `from {'.' * node.level}{node.module or ''} import` "
                                     f"is not allowed (modules you may import from here: {names})")
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_"):
                    raise AllowListError(f"{label} {_line(node)}: `from {node.module} import {alias.name}` is "
                                         "not allowed: import names one by one, none starting with `_`")
        elif isinstance(node, ast.Name):
            _check_name(node, known, label)
        elif isinstance(node, ast.arg) and node.arg.startswith("__"):
            raise AllowListError(f"{label} {_line(node)}: names starting with `__` are not allowed")
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            _check_attribute(node, allowed_paths, label)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) \
                and len(node.value) > MAX_CONSTANT_CHARS:
            raise AllowListError(f"{label} {_line(node)}: a string constant longer than "
                                 f"{MAX_CONSTANT_CHARS} characters")
    _check_module_chains(fn, allowed, label)


def _check_name(node: ast.Name, known: set[str], label: str) -> None:
    name = node.id
    if name.startswith("__"):
        raise AllowListError(f"{label} {_line(node)}: `{name}` is not allowed (names starting with `__`)")
    if isinstance(node.ctx, ast.Load) and name not in known:
        if name in FORBIDDEN_NAMES:
            raise AllowListError(f"{label} {_line(node)}: `{name}` is not allowed in measured code")
        raise AllowListError(f"{label} {_line(node)}: `{name}` is not available here: use your parameters, "
                             "your own local variables, the names the exercise provides, or a helper "
                             "function defined in the same cell")


def _check_attribute(node: ast.Attribute, allowed_paths: list[list[str]], label: str) -> None:
    """Check an outermost attribute chain (``a.b.c``): stores, ``.format`` and ``_`` names anywhere in it."""
    if not isinstance(node.ctx, ast.Load):
        raise AllowListError(f"{label} {_line(node)}: assigning to an attribute (`.{node.attr} = ...`) is not "
                             "allowed: measured code may not change objects it did not create")
    base, attrs = _chain(node)
    for attr in attrs:
        if attr in FORBIDDEN_ATTRIBUTES:
            raise AllowListError(f"{label} {_line(node)}: `.{attr}(...)` is not allowed; use an f-string")
        if attr in FRAME_ATTRIBUTES:
            raise AllowListError(f"{label} {_line(node)}: `.{attr}` is not allowed: it leads to the interpreter's "
                                 "frames and code, which measured code may not reach")
        if attr in FX_ATTRIBUTES:
            raise AllowListError(f"{label} {_line(node)}: `.{attr}` is not allowed: it edits or regenerates a "
                                 "torch.fx graph's Python code, which measured code may not do")
    if not any(a.startswith("_") for a in attrs):
        return
    full = [base, *attrs] if base is not None else None
    prefixes = [p for p in allowed_paths if full is not None and full[:len(p)] == p]
    if prefixes:
        longest = max(len(p) for p in prefixes)
        if not any(a.startswith("_") for a in full[longest:]):
            return
    shown = ".".join(full) if full else "(...)." + ".".join(attrs)
    paths = ", ".join(sorted(".".join(p) for p in allowed_paths))
    extra = f" (the only ones allowed here: {paths})" if paths else ""
    raise AllowListError(f"{label} {_line(node)}: `{shown}`: attributes starting with `_` are not allowed{extra}")


# ---------------------------------------------------------------- module attribute chains

def _under(name: object, root: str) -> bool:
    return isinstance(name, str) and (name == root or name.startswith(root + "."))


def _owner(obj: object) -> str | None:
    """The module that defines ``obj`` (a function, class, method or constant)."""
    module = getattr(obj, "__module__", None)
    if isinstance(module, str):
        return module
    objclass = getattr(obj, "__objclass__", None)
    if objclass is not None:
        return getattr(objclass, "__module__", None)
    return getattr(type(obj), "__module__", None)


def _resolve_chain(root_path: str, attrs: list[str], allowed: AllowList, dotted: frozenset[str]) -> object:
    """Walk ``root_path.attrs...`` over the real attributes; raise ``LookupError(shown, why)`` on a bad step.

    Each step must be a module under the allowed root (not ``root._x`` unless that dotted
    path is listed), or something whose owning module is under the root; a builtin is
    accepted only if the exercise allows it by name; primitive constants are accepted.
    """
    import builtins as _builtins
    import importlib

    top = root_path.split(".")[0]
    obj: object = importlib.import_module(root_path)
    path = root_path
    for attr in attrs:
        path = f"{path}.{attr}"
        if any(path == d or path.startswith(d + ".") for d in DENIED_PATHS) \
                and not any(path == d or d.startswith(path + ".") for d in dotted):
            # a denied part is reachable only along a path the cell lists exactly (torch.library.custom_op
            # opens torch.library for that one name, never torch.library.Library or anything below it)
            raise LookupError(path, "loads code, touches files or starts processes")
        try:
            obj = getattr(obj, attr)
        except Exception:  # noqa: BLE001 - anything unresolvable is rejected
            raise LookupError(path, "cannot be resolved") from None
        if any(path == d or path.startswith(d + ".") or d.startswith(path + ".") for d in dotted):
            continue
        if type(obj).__name__ == "module" and hasattr(obj, "__spec__"):
            name = getattr(obj, "__name__", None)
            if not _under(name, root_path) or any(p.startswith("_") for p in name.split(".")[1:]):
                raise LookupError(path, f"is the module `{name}`, not part of `{root_path}`")
            continue
        if isinstance(obj, _PRIMITIVES):
            continue
        owner = _owner(obj)
        if owner == "builtins" and getattr(_builtins, getattr(obj, "__name__", ""), None) is obj:
            if obj.__name__ in allowed.builtins:
                continue
            raise LookupError(path, f"is the builtin `{obj.__name__}`, which is not allowed here")
        if not _under(owner, top):
            raise LookupError(path, f"comes from `{owner}`, not from `{top}`")
    return obj


def _is_module(obj: object) -> bool:
    return type(obj).__name__ == "module" and hasattr(obj, "__spec__")


def _check_module_chains(fn: ast.FunctionDef, allowed: AllowList, label: str) -> None:
    """Resolve every attribute chain rooted at a provided module (or a local alias of one).

    A module may appear only at the start of a longer chain, or as the whole right-hand
    side of ``name = <module chain>`` (``F = torch.nn.functional``), which makes ``name``
    an alias resolved the same way; anywhere else (an argument, a default value, a tuple,
    a return) it is rejected, since chains rooted at it could not be checked.
    """
    roots = allowed.module_roots()
    if not roots:
        return
    dotted = allowed.dotted
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(fn):  # `import time as t`: t names the module time
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULE_PATHS:
                    roots[(alias.asname or alias.name).split(".")[0]] = MODULE_PATHS[alias.name.split(".")[0]]
        elif isinstance(node, ast.ImportFrom) and node.module in MODULE_PATHS:
            for alias in node.names:  # `from time import perf_counter` is `time.perf_counter`, checked alike
                try:
                    obj = _resolve_chain(MODULE_PATHS[node.module], [alias.name], allowed, dotted)
                except LookupError as exc:
                    raise AllowListError(f"{label} {_line(node)}: `from {node.module} import {alias.name}` "
                                         f"{exc.args[1]}") from None
                if _is_module(obj):
                    roots[alias.asname or alias.name] = f"{MODULE_PATHS[node.module]}.{alias.name}"
    # Aliases: every store of the name is `name = <chain that resolves to a module>`.
    stores: dict[str, list[ast.AST]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores.setdefault(node.id, []).append(node)
    aliases: dict[str, str] = {}

    def resolve(node: ast.AST) -> tuple[str, object] | None:
        base, attrs = _chain(node) if isinstance(node, ast.Attribute) else (
            (node.id, []) if isinstance(node, ast.Name) else (None, []))
        if base is None or base not in roots and base not in aliases:
            return None
        root_path = aliases.get(base, roots.get(base))
        try:
            obj = _resolve_chain(root_path, attrs, allowed, dotted)
        except LookupError as exc:
            shown = ".".join([base, *attrs])
            raise AllowListError(f"{label} {_line(node)}: `{shown}` ({exc.args[0]}) {exc.args[1]}: measured "
                                 "code may use only what the exercise's modules themselves define") from None
        return ".".join([root_path, *attrs]), obj

    for name, nodes in stores.items():
        values = [parents.get(id(n)) for n in nodes]
        if all(isinstance(v, ast.Assign) and len(v.targets) == 1 and v.targets[0] is n
               for v, n in zip(values, nodes, strict=True)):
            found = [resolve(v.value) for v in values]
            paths = {f[0] for f in found if f is not None and _is_module(f[1])}
            if len(paths) == 1 and all(f is not None and _is_module(f[1]) for f in found):
                aliases[name] = paths.pop()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(parents.get(id(node)), ast.Attribute):
            continue  # the outermost chain is resolved as a whole
        if not isinstance(node, (ast.Attribute, ast.Name)) or not isinstance(node.ctx, ast.Load):
            continue
        found = resolve(node)
        if found is None or not _is_module(found[1]):
            continue
        parent = parents.get(id(node))
        if isinstance(node, ast.Name) and isinstance(parent, ast.Attribute):
            continue  # the base of a chain: the chain is checked
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name) \
                and parent.targets[0].id in aliases:
            continue
        raise AllowListError(f"{label} {_line(node)}: the module `{found[0]}` may only be used to reach its "
                             f"functions (`{found[0]}.name`) or be given a plain local name (`m = {found[0]}`)")


# ---------------------------------------------------------------- extraction

def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _constant_check(node: ast.Assign) -> ast.FunctionDef:
    """A top-level ``NAME = expr`` as the function ``def NAME(): return expr``, for the allow-list."""
    fn = ast.FunctionDef(name=node.targets[0].id, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                         kw_defaults=[], defaults=[]), body=[ast.Return(value=node.value)], decorator_list=[],
                         returns=None, type_params=[])
    return ast.copy_location(fn, node)


def extract_function(source: str, name: str, allowed: AllowList, where: str = "your cell") -> str:
    """The allow-listed source of ``def name`` and the cell's top-level helpers and constants it uses.

    The result is re-generated with ``ast.unparse`` (comments dropped), in the cell's
    order. Helpers are top-level ``def``s; constants are top-level ``NAME = expr``
    assignments whose expression passes the same allow-list as measured code
    (``DTYPES = (torch.float32, torch.float64)``); ``name = helper`` makes ``name`` an
    alias of a helper. As in Python, the last top-level binding of a name is the one used.
    """
    tree = parse_source(source, where)
    _drop_docstrings(tree)
    _depth_and_size(tree, where)
    bound: dict[str, ast.AST] = {}
    for node in list(tree.body):
        if isinstance(node, ast.FunctionDef):
            bound[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bound[node.target.id] = _plain_assign(node.target.id, node.value, node)   # `FALLBACK: float = 1.0`
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(node.targets[0].elts) \
                and all(isinstance(t, ast.Name) for t in node.targets[0].elts):
            for t, v in zip(node.targets[0].elts, node.value.elts, strict=True):    # `ZERO, ONE = 0.0, 1.0`
                bound[t.id] = _plain_assign(t.id, v, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and _module_aliases(node) is not None:
            for alias_name, value in _module_aliases(node):   # `from torch import where`: `where = torch.where`
                bound[alias_name] = _plain_assign(alias_name, value, node)
        elif isinstance(node, ast.AsyncFunctionDef) and node.name == name:
            raise AllowListError(f"{where}: `{name}` must be a plain `def`, not `async def`")
        elif isinstance(node, (ast.AsyncFunctionDef, ast.ClassDef)):
            bound.pop(node.name, None)
        else:  # anything else that binds a top-level name makes it unavailable
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound.pop(sub.id, None)
                elif isinstance(sub, ast.alias):
                    bound.pop((sub.asname or sub.name).split(".")[0], None)
    target = bound.get(name)
    while isinstance(target, ast.Assign) and isinstance(target.value, ast.Name) and target.value.id != name:
        target = bound.get(target.value.id)  # `name = _impl`: an alias of a helper
    if not isinstance(target, ast.FunctionDef):
        raise AllowListError(f"{where}: no `def {name}(...)` at the top level of the cell "
                             "(replace the `raise NotImplementedError(...)` line with your code)")
    needed, queue = [name], [name]
    while queue:
        current = bound[queue.pop()]
        scope = _bound_names(current) if isinstance(current, ast.FunctionDef) else set()
        for node in ast.walk(current):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in needed \
                    and node.id not in scope and node.id in bound:
                needed.append(node.id)
                queue.append(node.id)
    helpers = frozenset(needed)
    parts = []
    order = {id(node): i for i, node in enumerate(tree.body)}
    chosen = sorted({id(bound[n]): bound[n] for n in needed}.values(), key=lambda n: order.get(id(n), 0))
    for node in chosen:
        if isinstance(node, ast.FunctionDef):
            check_function(node, allowed, helpers, where)
        elif not _is_literal(node.value):
            check_function(_constant_check(node), allowed, helpers, where)
        parts.append(ast.unparse(node))
    return "\n\n".join(parts) + "\n"


def _drop_docstrings(tree: ast.AST) -> None:
    """A function's docstring and its type hints are the student's prose: neither checked nor sent (nor
    are comments), so ``from typing import Callable`` for a hint costs nothing."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
    for node in ast.walk(tree):   # `x: Tuple[int] = 3` inside a function is `x = 3`
        for field_name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field_name, None)
            if isinstance(stmts, list) and node is not tree:
                setattr(node, field_name, [ast.copy_location(ast.Assign(targets=[s.target], value=s.value), s)
                                           if isinstance(s, ast.AnnAssign) and s.value is not None else s
                                           for s in stmts])
    ast.fix_missing_locations(tree)


def _plain_assign(name: str, value: ast.expr, where: ast.AST) -> ast.Assign:
    """``name = value`` as its own statement, placed where the original binding was (for the cell's order)."""
    node = ast.Assign(targets=[ast.Name(name, ast.Store())], value=value, lineno=where.lineno,
                      col_offset=where.col_offset)
    ast.fix_missing_locations(node)
    return node


def _module_aliases(node: ast.Import | ast.ImportFrom) -> list[tuple[str, ast.expr]] | None:
    """``[(name, torch.where), ...]`` for a top-level ``from torch import where`` (a module the exercise
    provides); None for any other import."""
    def chain(dotted: str) -> ast.expr:
        root, *rest = dotted.split(".")
        expr: ast.expr = ast.Name(root, ast.Load())
        for part in rest:
            expr = ast.Attribute(expr, part, ast.Load())
        return expr

    roots = set(MODULE_PATHS.values())
    out = []
    if isinstance(node, ast.ImportFrom):
        if node.level or not node.module or node.module.split(".")[0] not in roots:
            return None
        for alias in node.names:
            if alias.name == "*":
                return None
            out.append((alias.asname or alias.name, chain(f"{node.module}.{alias.name}")))
        return out
    return None   # `import torch.nn.functional as F` names a module, which measured code cannot hold


# Builtins Dynamo itself looks up in the traced function's builtins while it traces a nonstrict_trace
# call's arguments (guards on ``__builtins__["type"]``, ``["object"]``, ``["issubclass"]``; without them
# torch.compile fails with KeyError: 'type'). At run time only: the check still refuses these names in the source.
DYNAMO_BUILTINS = frozenset({"type", "object", "issubclass"})
NEEDS_DYNAMO_BUILTINS = ("torch._dynamo.nonstrict_trace",)

# what the test's own definitions (shipped with a ``code`` argument) need beyond the safe builtins: classes
TEST_DEFINITION_BUILTINS = frozenset({"__build_class__", "super", "object", "staticmethod", "classmethod",
                                      "property"})


def measured_namespace(namespace: dict, allowed: AllowList, extra_builtins: frozenset[str] = frozenset()) -> dict:
    """The namespace measured code runs in: the exercise's provided names that ``namespace`` binds, minus
    every object of the test API (``compile_course.testing.is_test_api``: the setup cells' ``student``,
    ``reference``, ``code``, ``spy``...), and builtins limited to ``allowed.builtins``.

    The test's ``code(...)`` arguments for a student's function are evaluated in one too, so nothing they
    build holds more than the function itself could name."""
    import builtins as _builtins
    import sys

    from compile_course.testing import is_test_api

    real_import = _builtins.__import__
    permitted = allowed.imports

    def limited_import(module, globals=None, locals=None, fromlist=(), level=0):
        # The AST check already limits `import` statements to ``allowed.imports``; this hook
        # also serves torch's C code, which imports modules it has already loaded (e.g. for
        # torch.tensor) through the calling frame's builtins.
        if level or (module not in permitted and module not in sys.modules):
            raise ImportError(f"import {module} is not allowed here")
        return real_import(module, globals, locals, fromlist, level)

    roots = set(MODULE_PATHS.values())

    def admitted(value) -> bool:   # a module other than the walkable ones leads to every other module
        return not is_test_api(value) and (not _is_module(value) or getattr(value, "__name__", None) in roots)

    scope = {n: namespace[n] for n in sorted(allowed.provided) if n in namespace and admitted(namespace[n])}
    scope["__name__"] = "__measured__"
    scope["__builtins__"] = {n: getattr(_builtins, n) for n in allowed.builtins | extra_builtins
                             if hasattr(_builtins, n)}
    scope["__builtins__"]["__import__"] = limited_import
    return scope


def load_checked(source: str, name: str, allowed: AllowList, namespace: dict) -> object:
    """Re-check ``source`` (as produced by ``extract_function``), run its definitions, return ``name``.

    Used inside the measuring process. ``namespace`` holds the provided names; the function sees
    only :func:`measured_namespace` of it. Each call starts from a fresh copy, so nothing a previous
    run left in a constant survives.
    """
    checked = extract_function(source, name, allowed, where="measured code")
    traced = DYNAMO_BUILTINS if any(p in allowed.dotted for p in NEEDS_DYNAMO_BUILTINS) else frozenset()
    scope = measured_namespace(namespace, allowed, traced)
    exec(compile(checked, "<measured>", "exec"), scope)  # noqa: S102 - allow-listed source in the sandbox
    return scope[name]
