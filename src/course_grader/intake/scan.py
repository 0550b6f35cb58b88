"""The static tampering scan: what the student's code cells change of shared objects, or reach of the interpreter.

What is reported is decided by one course profile, :data:`PROFILE`: every list of
what is protected lives there, and the static scan (here) and any runtime check
read the same lists, so they cannot disagree.

Binding a name in the student's own namespace is never a flag, whatever the
name (``max = 3``, ``class AssertionError(Exception): ...``): the verdicts are
computed outside the student's process, so it cannot change them. Changing
shared objects (a library's attributes, the builtins module, ``sys.modules``)
and reaching for the interpreter's internals (frames, ``gc.get_objects``, ``ctypes``) are
flags; tidying up (``gc.collect()``) is not. The scan reads cells only: matching them
to the exercise is :mod:`course_grader.intake.cells`'s.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Protocol

from compile_course.api_modules import TEST_API_PACKAGES
from course_grader.harness.allowlist.rules import strip_magics
from course_grader.harness.parsing import parse
from course_grader.status import CellRole, Severity

# ---------------------------------------------------------------- the course profile


@dataclass(frozen=True)
class CourseProfile:
    """What the course protects. The one source of these lists for every check."""

    # Libraries whose attributes a submission must not reassign or delete (any alias of them).
    protected_modules: frozenset[str]
    # Attribute paths that may be assigned all the same: configuration, not behaviour.
    allowed_attr_assign: re.Pattern
    # Modules whose import reaches for the interpreter or the host rather than for the exercise.
    banned_modules: frozenset[str]
    # Calls that reach for the interpreter's internals.
    banned_calls: frozenset[str]
    # Attributes that walk from an object to frames, code or globals.
    banned_attrs: frozenset[str]
    # Dotted paths (after resolving import aliases) that reach the interpreter or the host.
    banned_dotted: tuple[str, ...]
    # Names of the notebook machinery.
    banned_names: frozenset[str]
    # The test API's names in the setup cells and the modules it comes from: no answer cell names them.
    test_api_names: frozenset[str] = frozenset({"student", "reference"})
    test_api_modules: tuple[str, ...] = TEST_API_PACKAGES


PROFILE = CourseProfile(
    protected_modules=frozenset({"torch", "compile_course", "numpy", "math", "builtins", "sys", "os",
                                 "functools", "operator", "time", "random", "IPython", "matplotlib"}),
    allowed_attr_assign=re.compile(r"(^|\.)config\.|^torch\.backends\.|^os\.environ\b|^(np|numpy)\.random\.seed$"),
    banned_modules=frozenset({"ctypes", "cffi", "builtins", "_thread", "subprocess", "signal", "socket",
                              "pty", "marshal", "pdb", "bdb", "sqlite3", "ipykernel", "jupyter_client",
                              "course_grader", "resource", "mmap", "faulthandler", "tracemalloc"}),
    banned_calls=frozenset({"exec", "eval", "compile", "__import__", "globals", "vars", "breakpoint", "get_ipython",
                            "setattr", "delattr"}),
    banned_attrs=frozenset({"__builtins__", "__globals__", "__code__", "__closure__", "__subclasses__", "__dict__",
                            "__bases__", "__mro__", "__traceback__", "__loader__", "__spec__", "__self__", "__func__",
                            "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "tb_frame", "tb_next",
                            "gi_frame", "cr_frame", "ag_frame", "co_code", "co_consts", "__class__", "__reduce__",
                            "__reduce_ex__", "__setattr__", "__delattr__", "__getattribute__"}),
    banned_dotted=("sys.modules", "sys.settrace", "sys.setprofile", "sys._getframe", "sys.excepthook",
                   "sys.displayhook", "sys.meta_path", "sys.path_hooks", "sys.monitoring", "os.system", "os.popen",
                   "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.kill", "os.killpg", "os.dup", "os.setuid",
                   "os.setgid", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.callbacks",
                   "inspect.currentframe", "inspect.stack", "inspect.getouterframes", "inspect.trace",
                   "inspect.getsource", "torch._C._set", "unittest.mock", "importlib.import_module",
                   "importlib.reload", "importlib.util", "importlib.machinery"),
    banned_names=frozenset({"__builtins__", "get_ipython", "_ih", "_oh", "In", "Out", "__IPYTHON__"}),
)

class ScannedCell(Protocol):
    """What the scan reads of a cell of the feedback notebook (``cells.RunCell``)."""

    label: str
    source: str
    role: CellRole


@dataclass(frozen=True)
class ScanHit:
    """One thing the scan found in a student's cell."""

    cell: str            # the cell's label, as the student sees it ('your answer "def f(x): ..."')
    text: str            # "line N: what it does", or why the cell could not be scanned
    severity: Severity


# ---------------------------------------------------------------- static scan


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
    """Flags changes to shared objects and reaches for the interpreter; never a plain name binding."""

    def __init__(self, aliases: dict[str, str], profile: CourseProfile):
        self.p = profile
        self.aliases = aliases           # local name -> the module or object path it was imported as
        self.hits: list[tuple[int, str]] = []

    def hit(self, node, text: str) -> None:
        self.hits.append((getattr(node, "lineno", 0), text))

    def _banned_module(self, name: str) -> bool:
        root = name.split(".")[0]
        return name in self.p.banned_modules or root in self.p.banned_modules

    def _resolve(self, dotted: str) -> str:
        root, _, rest = dotted.partition(".")
        return self.aliases.get(root, root) + ("." + rest if rest else "")

    def visit_Import(self, node):
        for alias in node.names:
            if self._banned_module(alias.name):
                self.hit(node, f"imports {alias.name}")
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = root

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level == 0 and self._banned_module(mod):
            self.hit(node, f"imports from {mod}")
        for alias in node.names:
            if alias.name == "*":   # would bind a banned member (gc.get_objects) under a bare name
                members = (d[len(mod) + 1:] for d in self.p.banned_dotted if d.startswith(mod + "."))
                if node.level == 0 and mod and any("." not in m and not m.startswith("_") for m in members):
                    self.hit(node, f"imports * from {mod}")
                continue
            full = f"{mod}.{alias.name}" if mod else alias.name
            if node.level == 0 and (self._banned_module(full) or alias.name in self.p.banned_calls
                                    or full.startswith(self.p.banned_dotted)):
                self.hit(node, f"imports {alias.name} from {mod}")
            self.aliases[alias.asname or alias.name] = full

    def _store(self, target, node, verb: str) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._store(t, node, verb)
        elif isinstance(target, ast.Starred):
            self._store(target.value, node, verb)
        elif isinstance(target, ast.Attribute):
            dotted = _dotted(target)
            if dotted is None:
                # holder[0].attr = ..., f().attr = ...: an attribute of an object reached indirectly
                base = target.value
                while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
                    base = base.value if not isinstance(base, ast.Call) else base.func
                name = base.id if isinstance(base, ast.Name) else None
                if name is None or self._is_library(name) or name in self._containers:
                    self.hit(node, f"{verb} the attribute .{target.attr} of an object it reached indirectly")
                return
            full = self._resolve(dotted)
            if self.p.allowed_attr_assign.search(full):
                return
            if full.split(".")[0] in self.p.protected_modules and (dotted.split(".")[0] in self.aliases):
                self.hit(node, f"{verb} {full} (patching a library)")
        elif isinstance(target, ast.Subscript):
            base = _dotted(target.value)
            if base:
                full = self._resolve(base)
                if full.endswith("__dict__") or full in ("sys.modules", "builtins.__dict__") or base == "__builtins__":
                    self.hit(node, f"writes into {full}")

    def _is_library(self, name: str) -> bool:
        return self._resolve(name).split(".")[0] in self.p.protected_modules and name in self.aliases

    @property
    def _containers(self) -> set[str]:
        # names bound to a list/tuple/dict display holding an imported name: `holder = [torch.testing]`
        return getattr(self, "_holder_names", set())

    def visit_Assign(self, node):
        # `out = sys.stdout`: `out` now names a library object, so `out.write = ...` patches it.
        value = _dotted(node.value)
        library = value is not None and self._is_library(value.split(".")[0])
        for t in node.targets:
            self._store(t, node, "assigns to")
            if isinstance(t, ast.Name) and library:
                self.aliases[t.id] = self._resolve(value)
            if isinstance(t, ast.Name) and isinstance(node.value, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
                inner = [n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)]
                if any(self._is_library(n) for n in inner):
                    self._holder_names = self._containers | {t.id}
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._store(node.target, node, "assigns to")
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._store(node.target, node, "assigns to")
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            self._store(t, node, "deletes")
        self.generic_visit(node)

    def visit_For(self, node):
        self._store(node.target, node, "assigns to")
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self._store(item.optional_vars, node, "assigns to")
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in self.p.banned_calls \
                and self.aliases.get(node.func.id, node.func.id) == node.func.id:
            self.hit(node, f"calls {node.func.id}()")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr in self.p.banned_attrs:
            self.hit(node, f"uses .{node.attr}")
        dotted = _dotted(node)
        if dotted:
            full = self._resolve(dotted)
            if full.startswith(self.p.banned_dotted):
                self.hit(node, f"uses {full}")
                return
        self.generic_visit(node)

    def visit_Constant(self, node):
        # `getattr_from_fqn(g, "gi_frame.f_back")`: the same attributes, reached by a string
        if isinstance(node.value, (str, bytes)):   # every string, whatever its length
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            named = [part for part in re.split(r"[^A-Za-z0-9_]+", text) if part in self.p.banned_attrs]
            if named:
                self.hit(node, f"names .{named[0]} in a string")

    def visit_Name(self, node):
        if node.id in self.p.banned_names:
            self.hit(node, f"uses {node.id}")


def _test_api_uses(tree: ast.AST, aliases: dict[str, str], profile: CourseProfile) -> list[tuple[int, str]]:
    """An answer cell that names the test API (``student``, ``reference``, ``code``, ``spy``, ``Namespace``:
    whatever the setup cells imported from ``compile_course.testing``) or a way out of the allow-list
    (``eval``, ``exec`` ... named, not only called): measured code never needs one."""
    # a parameter or local of the same name is the student's own (`def check_equivalent(reference, ...)`),
    # but a default value is read from the notebook's namespace (`def f(s=student)`)
    bound = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    defaults = {id(n) for a in ast.walk(tree) if isinstance(a, ast.arguments)
                for d in a.defaults + [k for k in a.kw_defaults if k is not None] for n in ast.walk(d)}
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and (node.id not in bound or id(node) in defaults):
            full = aliases.get(node.id, node.id)
            if node.id in profile.test_api_names or full.startswith(profile.test_api_modules):
                hits.append((getattr(node, "lineno", 0), f"reaches the test API ({node.id})"))
            elif node.id in profile.banned_calls and full == node.id:
                hits.append((getattr(node, "lineno", 0), f"names {node.id}"))
    return hits


def scan(cells: list[ScannedCell], profile: CourseProfile = PROFILE) -> list[ScanHit]:
    """What the scan finds in the student's code cells, in order: a ``ScanHit`` each.

    Code too deeply nested for Python's parser is a notice: it cannot run either.

    Import aliases carry over from cell to cell, as they would in the kernel, and that includes
    the instructor's locked cells: they are scanned for what they import (``import torch, time``
    in the setup cell makes ``time.perf_counter = ...`` in a student's cell a patch of the
    ``time`` module), and only the student's cells (roles ``solution`` and ``student``) report."""
    aliases: dict[str, str] = {}
    hits = []
    for cell in cells:
        own = CellRole(cell.role).students
        try:
            tree = parse(strip_magics(cell.source))
        except (SyntaxError, ValueError):
            continue  # it cannot run either; the feedback run shows the error
        except (RecursionError, MemoryError):
            if own:
                hits.append(ScanHit(cell.label, "the code is nested too deeply for Python to read (it cannot run)",
                                    Severity.NOTICE))
            continue
        scanner = _Scanner(aliases, profile)
        try:
            scanner.visit(tree)
        except RecursionError:
            scanner.hits.append((1, "the code is nested too deeply to be scanned"))
        if CellRole(cell.role) is CellRole.SOLUTION:
            scanner.hits += _test_api_uses(tree, aliases, profile)
        aliases = scanner.aliases
        if own:
            hits += [ScanHit(cell.label, f"line {line}: {text}", Severity.FLAG) for line, text in scanner.hits]
    return hits
