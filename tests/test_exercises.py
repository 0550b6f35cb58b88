"""Run the exercises' self-checks as a student would: unanswered, and answered.

The unanswered runs start Jupyter kernels (one per exercise). The public test
cells are self-checks in the student's kernel (grades come from
the same cells, run by the grader: tests/course_grader/exercises/). The
answered case needs no kernel of its own: it is the solution notebook, which
``pytest --nbval`` re-executes.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
# what an unanswered self-check may raise: the stub itself, a failed assert, or the test API's
# AssertionErrors for an answer that is missing (AnswerError) or not data (ReplyError)
SELF_CHECK_ERRORS = ("NotImplementedError", "AssertionError", "AnswerError", "ReplyError")
AUTO = sorted(p.name for p in (ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb") if not p.name.startswith("ex06"))

def _read(folder: str, name: str):
    return nbformat.read(ROOT / folder / name, as_version=4)


def _run(nb, kernel_name: str):
    NotebookClient(nb, timeout=600, kernel_name=kernel_name, allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "exercises")}}).execute()
    return nb


def _kind(cell) -> str | None:
    return cell.metadata.get("course", {}).get("kind")


def _error(cell):
    errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
    return errors[0] if errors else None


def _test_cells(nb):
    return [c for c in nb.cells if _kind(c) in ("test", "hidden-test")]


@pytest.mark.parametrize("name", AUTO)
def test_unanswered_exercise_fails_its_public_tests_clearly(name, kernel_name):
    nb = _run(copy.deepcopy(_read("exercises", name)), kernel_name)
    tests = _test_cells(nb)
    assert tests and all(_kind(c) == "test" for c in tests)
    for cell in tests:
        error = _error(cell)
        assert error is not None, f"{cell.id} passes on an unanswered exercise"
        assert not any("✓" in o.get("text", "") for o in cell.outputs)
    first = _error(tests[0])
    assert first.ename in SELF_CHECK_ERRORS, f"{tests[0].id}: {first.ename}: {first.evalue}"
    # it says what to do: a failed check's own message, or where the stub line is to be replaced
    assert first.ename in ("AssertionError", "AnswerError") or "replace this line with your answer" in first.evalue
    assert first.ename != "AnswerError" or "replace the `raise NotImplementedError(...)` line" in first.evalue
    for cell in tests[1:]:
        assert _error(cell).ename in SELF_CHECK_ERRORS, f"{cell.id}: {_error(cell).ename}"


@pytest.mark.parametrize("name", AUTO)
def test_answered_exercise_passes_every_public_and_hidden_test(name):
    """With the model answers, every test cell prints its ✓ line and raises nothing.

    No kernel here: the answered exercise is the solution notebook (``course release`` derives the
    exercise from it, and tests/course_grader/exercise/test_release.py checks the committed exercises equal a
    fresh release), and ``pytest --nbval`` re-executes the solution and compares these very outputs.
    """
    tests = _test_cells(_read("solutions", name))
    assert tests, f"{name} has no test cells"
    for cell in tests:
        outputs = cell.get("outputs", [])
        assert not _error(cell), f"{cell.id}: {_error(cell).ename}: {_error(cell).evalue}"
        printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
        assert any(line.startswith("✓ ") for line in printed.splitlines()), f"{cell.id} printed no ✓ line"
        tags = set(cell.metadata.get("tags", []))
        assert not tags & {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}, (
            f"{cell.id}: nbval must compare this cell's output")
    hidden = {"ex01", "ex03", "ex04"}
    if name[:4] in hidden:
        assert any(_kind(c) == "hidden-test" for c in tests)


def names_the_statement_does_not_give(nb) -> list[str]:
    """The names of a student copy's ``allow`` lists that no markdown cell of the copy names: the copy keeps the
    lists (course check runs the grader's allow-list check), so each one says what the answer may call."""
    statement = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    listed = [name for cell in nb.cells for name in cell.metadata.get("course", {}).get("allow", [])]
    return [name for name in listed if f"`{name}`" not in statement and f"`{name}(" not in statement]


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb")))
def test_an_allow_list_says_nothing_the_statement_does_not(name):
    """docs/authoring.md: every name a solution cell allows is named in the statement, so the list in the
    student copy gives no answer away."""
    assert names_the_statement_does_not_give(_read("exercises", name)) == []


def test_an_allow_list_that_names_the_answer_is_found():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Make the size dynamic so it compiles once.")])
    nb.cells.append(nbformat.v4.new_code_cell("raise NotImplementedError"))
    nb.cells[-1].metadata["course"] = {"id": "ex99-a", "kind": "solution", "allow": ["torch._dynamo.mark_dynamic"]}
    assert names_the_statement_does_not_give(nb) == ["torch._dynamo.mark_dynamic"]
    nb.cells[0].source += " (`torch._dynamo.mark_dynamic`)"
    assert names_the_statement_does_not_give(nb) == []
