"""course_exchange reaches the grader only through course_grader.api (its public interface), and never
imports the tests."""

import ast
from pathlib import Path

import course_exchange

PACKAGE = Path(course_exchange.__file__).parent


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            if node.module == "course_grader":
                yield from (f"course_grader.{a.name}" for a in node.names)


def test_only_the_grader_api_is_imported():
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for name in _imports(path):
            if name.split(".")[0] in ("course_grader", "tests", "conftest", "hubtools"):
                found.setdefault(name, []).append(path.name)
    assert set(found) <= {"course_grader", "course_grader.api"}, found
    assert found, "the exchange uses the grader's api somewhere"
