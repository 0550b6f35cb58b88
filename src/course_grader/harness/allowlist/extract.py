"""A measured function cut out of its cell (with the cell's helpers and constants it uses), and
loaded in the measuring child with only the names and builtins its allow-list gives.

:func:`extract_function` runs in the grader (what it returns is what is sent) and again in the child
(:func:`load_checked`), each time through :func:`.check.check_function`.
"""

from __future__ import annotations

import ast

from course_grader.errors import AllowListError

from .check import bound_names, check_function, is_module
from .rules import MODULE_PATHS, AllowList, check_size, parse_source


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
    check_size(tree, where)
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
        scope = bound_names(current) if isinstance(current, ast.FunctionDef) else set()
        for node in ast.walk(current):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in needed \
                    and node.id not in scope and node.id in bound:
                needed.append(node.id)
                queue.append(node.id)
    helpers = frozenset(needed)
    parts = []
    order = {id(node): i for i, node in enumerate(tree.body)}
    chosen = sorted({id(bound[n]): bound[n] for n in needed}.values(), key=lambda n: order.get(id(n), 0))
    checked = {id(node): node if isinstance(node, ast.FunctionDef) else _constant_check(node)
               for node in chosen if isinstance(node, ast.FunctionDef) or not _is_literal(node.value)}
    shared: set[str] = set()     # helpers and constants whose value may be a module's state
    given: set[str] = set()      # helpers handed such state
    for _ in range(len(checked) + 1):    # to a fixed point: both only grow
        before = (set(shared), set(given))
        for fn in checked.values():
            sharing = check_function(fn, allowed, helpers, where, frozenset(shared), fn.name in given)
            if sharing.returns:
                shared.add(fn.name)
            given |= sharing.passes_to
        if (shared, given) == before:
            break
    for node in chosen:
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
NEEDS_DYNAMO_BUILTINS = ("torch.compiler.nonstrict_trace", "torch._dynamo.nonstrict_trace")

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
        return not is_test_api(value) and (not is_module(value) or getattr(value, "__name__", None) in roots)

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
