"""The allow-list check of one measured function: its nodes, names and attributes, and every
attribute chain rooted at a provided module, resolved over the real attributes.

:func:`check_function` raises ``AllowListError`` for the first construct it does not accept, with a
message a student can act on. It runs in the grader and again in the measuring child; it never runs
the code (:mod:`.extract` does that, in the child only).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from course_grader.errors import AllowListError

from ..denied import measured_denial
from .rules import (
    ALIASING_ATTRIBUTES,
    ALLOWED_NODES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
    FRAME_ATTRIBUTES,
    FX_ATTRIBUTES,
    MAX_CONSTANT_CHARS,
    MODULE_PATHS,
    NODE_NAMES,
    AllowList,
    check_size,
)
from .writes import Sharing, check_writes

_PRIMITIVES = (bool, int, float, complex, str, bytes, type(None))


def _chain(node: ast.Attribute) -> tuple[str | None, list[str]]:
    """``("torch", ["_dynamo", "reset"])`` for ``torch._dynamo.reset``; the base is None if not a plain name."""
    attrs: list[str] = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        attrs.append(current.attr)
        current = current.value
    return (current.id if isinstance(current, ast.Name) else None), attrs[::-1]


def bound_names(fn: ast.AST) -> set[str]:
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
                   where: str = "your function", shared: frozenset[str] = frozenset(),
                   shared_params: bool = False) -> Sharing:
    """Raise ``AllowListError`` for the first construct of ``fn`` that is not allowed.

    ``extra_names``: the cell's helpers and constants ``fn`` may name; ``shared``, ``shared_params``
    and the result: what :func:`.writes.check_writes` takes and returns (helpers that hand out, or are
    handed, state ``fn`` did not build)."""
    label = f"{where}: `{fn.name}`"
    check_size(fn, label)
    if fn.decorator_list:
        raise AllowListError(f"{label} {_line(fn)}: decorators are not allowed on measured functions")
    known = bound_names(fn) | allowed.names() | extra_names | {fn.name}
    allowed_paths = [p.split(".") for p in allowed.dotted]
    inner = {id(n.value) for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)}
    for node in ast.walk(fn):
        kind = type(node)
        if kind is ast.ClassDef and allowed.classes:
            if node.decorator_list or node.keywords:
                raise AllowListError(f"{label} {_line(node)}: class decorators and keywords are not allowed")
        elif not isinstance(node, ALLOWED_NODES):
            what = NODE_NAMES.get(kind, f"`{kind.__name__}`")
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
    is_module_node, is_class_node = _check_module_chains(fn, allowed, label)
    return check_writes(fn, label, is_module=is_module_node, is_class=is_class_node, local=bound_names(fn) - {fn.name},
                        provided=allowed.provided, helpers=extra_names - {fn.name}, shared=shared,
                        shared_params=shared_params)


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


ALIASING = ("it reaches a tensor's memory behind torch's count of in-place writes (its version counter), so a "
            "change made through it goes unseen; use the tensor itself, `.detach()` or `.clone()`")


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
        if attr in ALIASING_ATTRIBUTES:
            raise AllowListError(f"{label} {_line(node)}: `.{attr}` is not allowed: {ALIASING}")
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


def resolve_chain(root_path: str, attrs: list[str], allowed: AllowList, dotted: frozenset[str]) -> object:
    """Walk ``root_path.attrs...`` over the real attributes; raise ``LookupError(shown, why)`` on a bad step.

    Each step must be a module under the allowed root (not ``root._x`` unless that dotted
    path is listed), or something whose owning module is under the root; a builtin is
    accepted only if the exercise allows it by name; primitive constants are accepted.
    A module reached is known by its own name from there on (``torch.nn.functional.torch`` is
    ``torch``), so no other module's attribute leads around the parts of torch that are denied.
    """
    import builtins as _builtins
    import importlib

    def refuse_if_denied(path: str) -> None:
        # a denied part is reachable only along a path the cell lists exactly (torch.library.custom_op
        # opens torch.library for that one name, never torch.library.Library or anything below it)
        if measured_denial(path) is not None and not any(path == d or d.startswith(path + ".") for d in dotted):
            raise LookupError(path, "loads code, touches files or starts processes")

    top = root_path.split(".")[0]
    obj: object = importlib.import_module(root_path)
    path = root_path
    for attr in attrs:
        path = f"{path}.{attr}"
        refuse_if_denied(path)
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
            path = name   # torch.nn.parallel.distributed.dist is torch.distributed
            refuse_if_denied(path)
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


def is_module(obj: object) -> bool:
    return type(obj).__name__ == "module" and hasattr(obj, "__spec__")


SHALLOW = ("a shallow copy of a tensor shares its memory behind torch's count of in-place writes (its version "
           "counter), so a change made through it goes unseen; use `copy.deepcopy`, `dict(...)`, `list(...)` or "
           "`.clone()`")


def _check_module_chains(fn: ast.FunctionDef, allowed: AllowList,
                         label: str) -> tuple[Callable[[ast.AST], bool], Callable[[ast.AST], bool]]:
    """Resolve every attribute chain rooted at a provided module (or a local alias of one); return two
    tests of a name or chain of ``fn``: it is a module (``torch``, ``F = torch.nn.functional``), it is a
    class (``torch.Tensor``).

    A module may appear only at the start of a longer chain, or as the whole right-hand
    side of ``name = <module chain>`` (``F = torch.nn.functional``), which makes ``name``
    an alias resolved the same way; anywhere else (an argument, a default value, a tuple,
    a return) it is rejected, since chains rooted at it could not be checked.
    """
    roots = allowed.module_roots()
    if not roots:
        return (lambda node: False), (lambda node: False)
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
                    obj = resolve_chain(MODULE_PATHS[node.module], [alias.name], allowed, dotted)
                except LookupError as exc:
                    raise AllowListError(f"{label} {_line(node)}: `from {node.module} import {alias.name}` "
                                         f"{exc.args[1]}") from None
                if obj is copy.copy:
                    raise AllowListError(f"{label} {_line(node)}: `from copy import copy` is not allowed: {SHALLOW}")
                if is_module(obj):
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
            obj = resolve_chain(root_path, attrs, allowed, dotted)
        except LookupError as exc:
            shown = ".".join([base, *attrs])
            raise AllowListError(f"{label} {_line(node)}: `{shown}` ({exc.args[0]}) {exc.args[1]}: measured "
                                 "code may use only what the exercise's modules themselves define") from None
        return (obj.__name__ if is_module(obj) else ".".join([root_path, *attrs])), obj

    for name, nodes in stores.items():
        values = [parents.get(id(n)) for n in nodes]
        if all(isinstance(v, ast.Assign) and len(v.targets) == 1 and v.targets[0] is n
               for v, n in zip(values, nodes, strict=True)):
            found = [resolve(v.value) for v in values]
            paths = {f[0] for f in found if f is not None and is_module(f[1])}
            if len(paths) == 1 and all(f is not None and is_module(f[1]) for f in found):
                aliases[name] = paths.pop()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(parents.get(id(node)), ast.Attribute):
            continue  # the outermost chain is resolved as a whole
        if not isinstance(node, (ast.Attribute, ast.Name)) or not isinstance(node.ctx, ast.Load):
            continue
        found = resolve(node)
        if found is not None and found[1] is copy.copy:
            raise AllowListError(f"{label} {_line(node)}: `{ast.unparse(node)}` is not allowed: {SHALLOW}")
        if found is None or not is_module(found[1]):
            continue
        parent = parents.get(id(node))
        if isinstance(node, ast.Name) and isinstance(parent, ast.Attribute):
            continue  # the base of a chain: the chain is checked
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name) \
                and parent.targets[0].id in aliases:
            continue
        raise AllowListError(f"{label} {_line(node)}: the module `{found[0]}` may only be used to reach its "
                             f"functions (`{found[0]}.name`) or be given a plain local name (`m = {found[0]}`)")

    seen: dict[int, object] = {}
    missing = object()

    def found_object(node: ast.AST) -> object:
        if not isinstance(node, (ast.Attribute, ast.Name)):
            return missing
        if id(node) not in seen:
            try:
                found = resolve(node)
            except AllowListError:
                found = None
            seen[id(node)] = missing if found is None else found[1]
        return seen[id(node)]
    return lambda node: is_module(found_object(node)), lambda node: isinstance(found_object(node), type)
