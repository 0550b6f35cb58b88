"""The code's layout, read from its own import statements (top level and inside functions).

Imports run one way: the tooling (``course_tools``) on top of the grader (``course_grader``) on top of
the student helpers (``compile_course``); the hub exchange (``course_exchange``) reaches the grader only
through ``course_grader.api``. No import circle, and no module imports another's private name: a module
that needs one is asking for a public object.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
# a package may import the packages after it in this list, never one before it
LAYERS = ["course_tools", "course_exchange", "course_grader", "compile_course"]


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[0] not in LAYERS:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]):
    """``(imported module, imported name or None)`` for every import statement of one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            for alias in node.names:
                full = f"{target}.{alias.name}"
                yield (full, None) if full in known else (target, alias.name)


def edges() -> dict[str, set[str]]:
    known = modules()
    graph = {name: set() for name in known}
    for name, path in known.items():
        for target, _ in imports(name, path, known):
            if target in known and target != name:
                graph[name].add(target)
    return graph


def test_the_reader_sees_every_package():
    names = modules()
    assert {"course_tools.cli", "course_grader.api", "compile_course.testing", "course_exchange.service"} <= set(names)


def test_imports_run_one_way_tooling_then_grader_then_student_helpers():
    wrong = []
    for name, targets in edges().items():
        mine = LAYERS.index(name.split(".")[0])
        for target in targets:
            theirs = LAYERS.index(target.split(".")[0])
            if theirs < mine:
                wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_the_exchange_reaches_the_grader_only_through_its_api():
    wrong = [f"{name} imports {target}" for name, targets in edges().items() if name.startswith("course_exchange")
             for target in targets if target.startswith("course_grader") and target not in ("course_grader.api",)]
    assert wrong == []


def test_no_import_circle():
    try:
        list(TopologicalSorter(edges()).static_order())
    except CycleError as exc:
        raise AssertionError(f"import circle: {' -> '.join(exc.args[1])}") from None


def test_no_module_imports_another_modules_private_name():
    known = modules()
    wrong = [f"{name} imports {target}.{imported}" for name, path in known.items()
             for target, imported in imports(name, path, known)
             if imported and imported.startswith("_") and not imported.startswith("__") and target != name
             and target.split(".")[0] in LAYERS]
    assert wrong == []


def test_the_reader_finds_what_it_looks_for(tmp_path, monkeypatch):
    """The checks can fail: a circle and a private import written into a copy are found."""
    copy = tmp_path / "src"
    (copy / "course_grader").mkdir(parents=True)
    (copy / "course_grader" / "__init__.py").write_text("")
    (copy / "course_grader" / "a.py").write_text("from course_grader.b import _hidden\n")
    (copy / "course_grader" / "b.py").write_text("def f():\n    from . import a\n_hidden = 1\n")
    monkeypatch.setitem(globals(), "SRC", copy)
    graph = edges()
    assert graph["course_grader.a"] == {"course_grader.b"} and graph["course_grader.b"] == {"course_grader.a"}
    try:
        test_no_import_circle()
    except AssertionError as exc:
        assert "import circle" in str(exc)
    else:
        raise AssertionError("the circle was not found")
    try:
        test_no_module_imports_another_modules_private_name()
    except AssertionError as exc:
        assert "course_grader.a imports course_grader.b._hidden" in str(exc)
    else:
        raise AssertionError("the private import was not found")
