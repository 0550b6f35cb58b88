"""Static scan of the student's code for ways to tamper with the grader.

A hit is a flag: the attempt scores 0 and the instructor sees the line. The
scan looks for patching what tests rely on (attributes of imported modules,
builtins, the names the instructor's cells import or define), for
introspection that reaches the grader (frames, gc, sys.modules, tracing,
the IPython shell), for reading the instructor's files, and for printed text
that imitates a test result. Configuration assignments such as
``torch._dynamo.config.cache_size_limit = 8`` are allowed.
"""

from __future__ import annotations

import ast
import re

from .assemble import RunCell
from .safe_ast import parse

PROTECTED_NAMES = {
    "AssertionError", "BaseException", "Exception", "print", "isinstance", "issubclass", "getattr", "hasattr",
    "bool", "repr", "type", "callable", "__import__", "__build_class__", "__builtins__",
    "equal", "allclose", "assert_close", "explain", "compare", "Case", "CompileWatch", "CompileCounter",
    "CompileCounterWithBackend", "call_without_recompile", "recompile_log", "checks", "get_ipython",
}
BANNED_MODULES = {"ctypes", "cffi", "gc", "importlib", "builtins", "threading", "_thread", "multiprocessing",
                  "concurrent", "subprocess", "signal", "socket", "pty", "marshal", "code", "codeop", "pdb", "bdb",
                  "sqlite3", "IPython", "ipykernel", "nbformat", "nbclient", "jupyter_client", "compile_course.grading"}
BANNED_CALLS = {"exec", "eval", "compile", "__import__", "globals", "vars", "breakpoint", "get_ipython", "setattr",
                "delattr", "__shell_escape__"}
BANNED_ATTRS = {"__builtins__", "__globals__", "__code__", "__closure__", "__subclasses__", "__dict__", "__bases__",
                "__mro__", "__traceback__", "__loader__", "__spec__", "__self__", "__func__", "__wrapped__",
                "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
                "cr_frame", "ag_frame", "co_code", "co_consts"}
BANNED_DOTTED = ("sys.modules", "sys.settrace", "sys.setprofile", "sys._getframe", "sys.excepthook", "sys.displayhook",
                 "sys.meta_path", "sys.path_hooks", "sys.monitoring", "sys.__stdout__", "sys.__stderr__",
                 "os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.kill", "os.dup",
                 "os.write", "os.open", "os.fdopen", "os.chdir", "os.setuid", "inspect.currentframe", "inspect.stack",
                 "inspect.getouterframes", "inspect.trace", "inspect.getsource", "torch._C._set", "unittest.mock")
ALLOWED_ATTR_ASSIGN = re.compile(r"(^|\.)config\.|^torch\.backends\.|^os\.environ")
COURSE_PATHS = re.compile(r"solutions|gradebook|\.sqlite|\.git\b|\.ipynb", re.I)
FAKE_RESULT = (re.compile(r"✓|✔|☑|✅|\bpassed\b|\ball tests\b|\btests? ok\b|\bfull marks\b", re.I),
               re.compile(r"\bPASS(ED)?\b|\bOK\b"))



def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, imported: set[str], protected: set[str]):
        self.imported = set(imported)   # names bound to modules or objects imported anywhere in the notebook
        self.protected = protected
        self.hits: list[tuple[int, str]] = []
        self.aliases: dict[str, str] = {}   # local name -> module it stands for
        self.depth = 0

    def hit(self, node, text: str) -> None:
        self.hits.append((getattr(node, "lineno", 0), text))

    def visit_Import(self, node):
        for alias in node.names:
            root = alias.name.split(".")[0]
            if alias.name in BANNED_MODULES or root in BANNED_MODULES:
                self.hit(node, f"imports {alias.name}")
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            self._bind(node, alias.asname or root, imported=True)

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if mod.split(".")[0] in BANNED_MODULES or mod.startswith("compile_course.grading"):
            self.hit(node, f"imports from {mod}")
        for alias in node.names:
            if alias.name == "*":
                self.hit(node, f"from {mod} import *")
                continue
            if alias.name in BANNED_MODULES or alias.name in BANNED_CALLS or alias.name in BANNED_ATTRS \
                    or f"{mod}.{alias.name}".startswith(BANNED_DOTTED) or (mod == "compile_course" and alias.name == "grading"):
                self.hit(node, f"imports {alias.name} from {mod}")
            self.aliases[alias.asname or alias.name] = f"{mod}.{alias.name}"
            self._bind(node, alias.asname or alias.name, imported=True)

    def _bind(self, node, name: str, imported: bool = False):
        if self.depth == 0 and name in self.protected and not (imported and name in self.imported):
            self.hit(node, f"rebinds {name!r}, which the tests rely on")
        if imported:
            self.imported.add(name)

    def _targets(self, target, node):
        if isinstance(target, ast.Name):
            self._bind(node, target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._targets(t, node)
        elif isinstance(target, ast.Starred):
            self._targets(target.value, node)
        elif isinstance(target, ast.Attribute):
            dotted = _dotted(target)
            if dotted and not ALLOWED_ATTR_ASSIGN.search(dotted):
                if dotted.split(".")[0] in self.imported:
                    self.hit(node, f"assigns to {dotted} (patching a library)")
                elif dotted.split(".")[0] in self.protected:
                    self.hit(node, f"assigns to {dotted}")
        elif isinstance(target, ast.Subscript):
            base = _dotted(target.value)
            if base and (base.endswith("__dict__") or base.endswith("modules") or base in ("__builtins__",)):
                self.hit(node, f"writes into {base}")

    def visit_Assign(self, node):
        for t in node.targets:
            self._targets(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._targets(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._targets(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            self._targets(t, node)
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self._targets(node.target, node)
        self.generic_visit(node)

    def visit_For(self, node):
        self._targets(node.target, node)
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self._targets(item.optional_vars, node)
        self.generic_visit(node)

    def _scoped(self, node, name: str | None):
        if name:
            self._bind(node, name)
        for deco in getattr(node, "decorator_list", []):
            self.visit(deco)
        self.depth += 1
        for child in ast.iter_child_nodes(node):
            if child not in getattr(node, "decorator_list", []):
                self.visit(child)
        self.depth -= 1

    def visit_FunctionDef(self, node):
        self._scoped(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._scoped(node, node.name)

    def visit_Lambda(self, node):
        self._scoped(node, None)

    def visit_Global(self, node):
        for name in node.names:
            if name in self.protected:
                self.hit(node, f"declares global {name}")

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in BANNED_CALLS and node.func.id not in self.imported:
            self.hit(node, f"calls {node.func.id}()")
        if isinstance(node.func, ast.Name) and node.func.id == "open":
            for arg in node.args[:1]:
                if not isinstance(arg, ast.Constant):
                    self.hit(node, "opens a file whose path is computed")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr in BANNED_ATTRS:
            self.hit(node, f"uses .{node.attr}")
        dotted = _dotted(node)
        if dotted:
            root, _, rest = dotted.partition(".")
            full = self.aliases.get(root, root) + ("." + rest if rest else "")
            if full.startswith(BANNED_DOTTED):
                self.hit(node, f"uses {full}")
                return
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in ("__builtins__", "get_ipython", "_ih", "_oh", "In", "Out"):
            self.hit(node, f"uses {node.id}")

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            if COURSE_PATHS.search(node.value):
                self.hit(node, f"mentions a course path or file ({node.value[:60]!r})")
            if any(p.search(node.value) for p in FAKE_RESULT):
                self.hit(node, f"prints text that imitates a test result ({node.value[:60]!r})")


def scan_cells(cells: list[RunCell]) -> list[tuple[str, str]]:
    """``[(cell label, reason), ...]`` for the student's cells (solution and extra code)."""
    imported: set[str] = set()
    protected = set(PROTECTED_NAMES)
    hits = []
    for cell in cells:
        if cell.trusted:
            imported.update(cell.pins)
            protected.update(cell.pins)
            continue
        code = _strip_magics(cell.code)
        try:
            tree = parse(code)
        except SyntaxError:
            continue  # it will fail when run; nothing to scan
        scanner = _Scanner(imported, protected)
        scanner.visit(tree)
        imported = scanner.imported
        for line, text in scanner.hits:
            hits.append((cell.label, f"line {line}: {text}"))
    return hits


def _strip_magics(code: str) -> str:
    """IPython magics (``%timeit``, ``!cmd``) are not Python; ``!`` shell escapes are a hit of their own."""
    lines = []
    for line in code.splitlines():
        s = line.lstrip()
        if s.startswith("!") or s.startswith("%%bash") or s.startswith("%%sh") or s.startswith("%%script") or s.startswith("%system") or s.startswith("%sx"):
            lines.append("__shell_escape__()")
        elif s.startswith("%"):
            lines.append(line[: len(line) - len(s)] + "pass")
        else:
            lines.append(line)
    return "\n".join(lines)
