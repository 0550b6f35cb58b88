"""What a measuring child is sent besides the question: what the student's function may name, and the
test cell's own definitions under neutral names.

``allowlist_for`` builds the allow-list of an exercise's answer from its setup cells (every name they
bind, minus the test API: :func:`test_api_names`, minus modules other than the walkable ones); the
child builds the same one again from what the grader sends (``wire.payloads.AllowSpec``).
:class:`Shipped` cuts the test cell's top-level defs and classes that a ``code(...)`` argument uses out of
the test's source, renamed ``_given_N`` and without docstrings: the child sees what the expression needs,
never the test's names or anything else of it. ``course_grader.verdict.remote`` asks the questions.
"""

from __future__ import annotations

import ast
import importlib.util

from compile_course.api_modules import TEST_API_PACKAGES, is_test_api_module
from course_grader.harness.allowlist.rules import MODULE_PATHS, AllowList, for_cell
from course_grader.harness.parsing import parse

DEFAULT_PROVIDED = frozenset({"torch", "nn"})
DEFAULT_IMPORTS = frozenset({"time", "copy"})


def _statements(sources: list[str]):
    """The top-level statements of the setup cells that parse (a cell that does not is the notebook's to report)."""
    for source in sources:
        try:
            yield from parse(source).body
        except SyntaxError:
            continue


def setup_names(sources: list[str]) -> frozenset[str]:
    """Every top-level name the setup cells bind (defs, classes, assignments, imports)."""
    names: set[str] = set()
    for node in _statements(sources):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return frozenset(names)


# how a setup cell names the test API's modules from the package: `from compile_course import testing`
TEST_API_PARTS = frozenset(m.split(".")[1] for m in TEST_API_PACKAGES)
# calls in a setup cell that hand out a namespace: what they bind is the test API (`Namespace(globals())`)
NAMESPACE_CALLS = frozenset({"globals", "locals", "vars", "eval", "exec", "compile", "__import__", "getattr"})


def test_api_names(sources: list[str]) -> frozenset[str]:
    """The setup cells' names for the test API: imported from a module of
    ``compile_course.api_modules``
    (``code``, ``spy``, ``Namespace``...), and every name assigned from an expression that uses one of
    them or a namespace builtin (``student = reference = Namespace(globals())``)."""
    api: set[str] = set()
    assigns = []
    for node in _statements(sources):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level \
                and is_test_api_module(node.module):
            api.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "compile_course":
            api.update(a.asname or a.name for a in node.names if a.name in TEST_API_PARTS)
        elif isinstance(node, ast.Import):
            api.update((a.asname or a.name).split(".")[0] for a in node.names
                       if is_test_api_module(a.name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            assigns.append(node)
    changed = True
    while changed:
        changed = False
        for node in assigns:
            value = getattr(node, "value", None)
            used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value is not None else set()
            if used & (api | NAMESPACE_CALLS):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                stored = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if stored - api:
                    api |= stored
                    changed = True
    return frozenset(api)


def _other_modules(sources: list[str]) -> frozenset[str]:
    """Setup names bound to a module other than those measured code may walk (``MODULE_PATHS``): such a
    module's attributes lead to other modules (``logging.os``), which no chain check would see."""
    found: set[str] = set()
    for node in _statements(sources):
        if isinstance(node, ast.Import):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                try:
                    is_module = importlib.util.find_spec(f"{node.module}.{a.name}") is not None
                except (ImportError, ValueError, AttributeError):
                    is_module = False
                if is_module:
                    found.add(a.asname or a.name)
    return frozenset(found - set(MODULE_PATHS))


def allowlist_for(exercise, allow: tuple[str, ...] = ()) -> AllowList:
    """What a student's function may name: torch, ``nn``, the names the setup cells bind except the test
    API (:func:`test_api_names`: measured code never holds ``student``, ``code``, ``spy`` ...), safe
    builtins, and a solution cell's ``allow`` list (dotted names; builtin names)."""
    sources = list(exercise.setup_sources)
    provided = DEFAULT_PROVIDED | (setup_names(sources) - test_api_names(sources) - _other_modules(sources))
    return for_cell(provided, DEFAULT_IMPORTS, allow)


class Shipped:
    """The test cell's own top-level defs and classes, sent to a child under neutral names."""

    def __init__(self, test_source: str):
        self.defs: dict[str, ast.AST] = {}
        try:
            tree = parse(test_source)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
        self.renamed: dict[str, str] = {}

    def expression(self, text: str) -> tuple[str, list[str]]:
        """``(the expression with shipped names replaced, the shipped definitions it needs)``."""
        try:
            tree = parse(text, mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"code({text!r}) is not an expression: {exc.msg}") from None
        needed = self._needed(tree)
        return ast.unparse(self._rename(tree)), [self._source(n) for n in needed]

    def _needed(self, tree: ast.AST) -> list[str]:
        order: list[str] = []
        queue = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in self.defs]
        while queue:
            name = queue.pop(0)
            if name in order:
                continue
            order.append(name)
            queue += [n.id for n in ast.walk(self.defs[name]) if isinstance(n, ast.Name) and n.id in self.defs]
        for name in order:
            self.renamed.setdefault(name, f"_given_{len(self.renamed)}")
        return order[::-1]

    def _rename(self, tree: ast.AST) -> ast.AST:
        renamed = self.renamed

        class Rename(ast.NodeTransformer):
            def visit_Name(self, node):  # noqa: N802
                if node.id in renamed:
                    return ast.copy_location(ast.Name(renamed[node.id], node.ctx), node)
                return node

            def visit_FunctionDef(self, node):  # noqa: N802
                self.generic_visit(node)
                node.name = renamed.get(node.name, node.name)
                _drop_docstring(node)
                return node

            visit_ClassDef = visit_FunctionDef  # noqa: N815

        return ast.fix_missing_locations(Rename().visit(tree))

    def _source(self, name: str) -> str:
        import copy

        return ast.unparse(self._rename(copy.deepcopy(self.defs[name])))


def _drop_docstring(node) -> None:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:] or [ast.Pass()]
