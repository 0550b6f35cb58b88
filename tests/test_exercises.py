"""Run the exercises' self-checks as a student would: unanswered, and answered.

These tests start Jupyter kernels (about 1.5 minutes in all). The public test
cells are self-checks in the student's kernel (grades come from
``course_grader.exercises``, tested in tests/course_grader/exercises/). The
answered run is the released exercise with the model answers filled in and the
hidden-test cells (which only describe what the grader checks) put back at
their places.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
AUTO = sorted(p.name for p in (ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb") if not p.name.startswith("ex06"))

def _read(folder: str, name: str):
    return nbformat.read(ROOT / folder / name, as_version=4)


def _run(nb):
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "exercises")}}).execute()
    return nb


def _kind(cell) -> str | None:
    return cell.metadata.get("course", {}).get("kind")


def _error(cell):
    errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
    return errors[0] if errors else None


def assemble(name: str, answers: dict[str, str] | None = None):
    """The exercise as a grader runs it: answers from the solution (or ``answers``), hidden tests injected."""
    solution = _read("solutions", name)
    exercise = copy.deepcopy(_read("exercises", name))
    by_id = {c.id: c for c in solution.cells}
    for cell in exercise.cells:
        if _kind(cell) == "solution":
            cell.source = (answers or {}).get(cell.id, by_id[cell.id].source)
    ids = [c.id for c in exercise.cells]
    for index, cell in enumerate(solution.cells):
        if _kind(cell) == "hidden-test":
            before = solution.cells[index - 1].id
            exercise.cells.insert(ids.index(before) + 1, copy.deepcopy(cell))
            ids = [c.id for c in exercise.cells]
    return exercise


def _test_cells(nb):
    return [c for c in nb.cells if _kind(c) in ("test", "hidden-test")]


@pytest.mark.parametrize("name", AUTO)
def test_unanswered_exercise_fails_its_public_tests_clearly(name):
    nb = _run(copy.deepcopy(_read("exercises", name)))
    tests = _test_cells(nb)
    assert tests and all(_kind(c) == "test" for c in tests)
    for cell in tests:
        error = _error(cell)
        assert error is not None, f"{cell.id} passes on an unanswered exercise"
        assert not any("✓" in o.get("text", "") for o in cell.outputs)
    first = _error(tests[0])
    assert first.ename in ("NotImplementedError", "AssertionError"), f"{tests[0].id}: {first.ename}: {first.evalue}"
    assert first.ename == "AssertionError" or "replace this line with your answer" in first.evalue
    for cell in tests[1:]:
        assert _error(cell).ename in ("NotImplementedError", "AssertionError"), f"{cell.id}: {_error(cell).ename}"


@pytest.mark.parametrize("name", AUTO)
def test_answered_exercise_passes_every_public_and_hidden_test(name):
    nb = _run(assemble(name))
    tests = _test_cells(nb)
    failed = {c.id: f"{_error(c).ename}: {_error(c).evalue}" for c in tests if _error(c)}
    assert not failed, failed
    for cell in tests:
        assert any(o.get("text", "").startswith("✓ ") for o in cell.outputs), f"{cell.id} printed no ✓ line"
    hidden = {"ex01", "ex03", "ex04"}
    if name[:4] in hidden:
        assert any(_kind(c) == "hidden-test" for c in tests)
