"""``course release``: deterministic, idempotent, strips every answer, and ``--check`` notices edits."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from course_grader.errors import ExerciseFormatError
from course_grader.exercise import release
from course_grader.exercise.model import BEGIN_CODE, BEGIN_MD, END_CODE, END_MD, Exercise

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb"))
AUTO = [s for s in SOLUTIONS if not s.name.startswith("ex06")]


def _course_cells(nb):
    return [c for c in nb.cells if "course" in c.metadata]


def _regions(source: str, begin: str, end: str) -> list[str]:
    return re.findall(re.escape(begin) + r"(.*?)" + re.escape(end), source, re.DOTALL)


def test_there_are_five_auto_graded_exercises_and_one_manual():
    assert len(AUTO) >= 5 and len(SOLUTIONS) == len(AUTO) + 1
    manual = nbformat.read(ROOT / "solutions" / "ex06_check_understanding.ipynb", as_version=4)
    answers = [c for c in _course_cells(manual) if c.metadata["course"]["kind"] == "answer"]
    assert 3 <= len(answers) <= 5 and all(c.metadata["course"].get("rubric") for c in answers)


def test_release_is_byte_identical_on_rerun(tmp_path):
    first = release.release_all(ROOT / "solutions", tmp_path / "a")
    texts = {p.name: p.read_bytes() for p in first}
    second = release.release_all(ROOT / "solutions", tmp_path / "a")
    third = release.release_all(ROOT / "solutions", tmp_path / "b")
    assert [p.name for p in first] == [s.name for s in SOLUTIONS]
    assert {p.name: p.read_bytes() for p in second} == texts == {p.name: p.read_bytes() for p in third}


def test_committed_exercises_match_a_fresh_release():
    problems = release.check_all(ROOT / "solutions", ROOT / "exercises")
    assert not problems, "exercises/ is stale; run `course release`:\n" + "\n".join(problems)


def test_check_detects_a_hand_edit_and_a_missing_file(tmp_path, capsys):
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    args = ["--solutions", str(ROOT / "solutions"), "--exercises", str(tmp_path / "exercises")]
    assert release.main(["--check", *args]) == 0
    edited = tmp_path / "exercises" / "ex01_capture_boundary.ipynb"
    nb = nbformat.read(edited, as_version=4)
    nb.cells[0].source += "\nA hand edit."
    nbformat.write(nb, edited)
    (tmp_path / "exercises" / "ex02_diagnose.ipynb").unlink()
    capsys.readouterr()
    assert release.main(["--check", *args]) == 1
    out = capsys.readouterr().out
    assert "ex01_capture_boundary.ipynb: differs" in out and "ex02_diagnose.ipynb: missing" in out
    assert release.main(args) == 1   # the hand edit stops the release (see the next tests) ...
    assert release.main([*args, "--force"]) == 0 and release.main(["--check", *args]) == 0  # ... --force repairs it


@pytest.mark.parametrize("source", SOLUTIONS, ids=lambda p: p.stem)
def test_exercise_has_no_answers_outputs_hidden_tests_or_rubric(source):
    solution = nbformat.read(source, as_version=4)
    exercise = nbformat.read(ROOT / "exercises" / source.name, as_version=4)
    text = nbformat.writes(exercise)
    for marker in (BEGIN_CODE, END_CODE, BEGIN_MD, END_MD, '"rubric"'):
        assert marker not in text
    hidden = [c.id for c in _course_cells(solution) if c.metadata["course"]["kind"] == "hidden-test"]
    for cid in hidden:
        assert cid not in text, f"hidden test {cid} leaked into the exercise"
    for cell in solution.cells:
        for region in _regions(cell.source, BEGIN_CODE, END_CODE) + _regions(cell.source, BEGIN_MD, END_MD):
            answer = region.strip()
            assert answer and answer not in text, f"{cell.id}: the answer survived the release"
    for cell in exercise.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
        kind = cell.metadata.get("course", {}).get("kind")
        if kind in ("locked", "test"):
            assert cell.metadata["editable"] is False and cell.metadata["deletable"] is False
        if kind == "solution":
            assert "raise NotImplementedError(" in cell.source


@pytest.mark.parametrize("source", SOLUTIONS, ids=lambda p: p.stem)
def test_every_exercise_cell_id_exists_in_its_solution_with_the_same_kind(source):
    solution = {c.id: c.metadata["course"] for c in _course_cells(nbformat.read(source, as_version=4))}
    exercise = nbformat.read(ROOT / "exercises" / source.name, as_version=4)
    for cell in _course_cells(exercise):
        course = cell.metadata["course"]
        assert cell.id == course["id"] and course["id"] in solution
        assert course["kind"] == solution[course["id"]]["kind"]
        assert course.get("points") == solution[course["id"]].get("points")
    kept = [cid for cid, c in solution.items() if c["kind"] != "hidden-test"]
    assert [c.id for c in _course_cells(exercise)] == kept


def test_stub_keeps_indentation_and_surrounding_code():
    source = ("def f(x):\n    y = x + 1\n    ### BEGIN SOLUTION\n    return y * 2\n    ### END SOLUTION\n\n"
              "print('after')")
    assert release.stub_code(source, "ex99-f") == (
        "def f(x):\n    y = x + 1\n"
        '    raise NotImplementedError("ex99-f: replace this line with your answer")\n\nprint(\'after\')')


def test_markdown_answer_becomes_a_prompt(notebook_file):
    path = notebook_file("ex99_x",
                         [("markdown", "ex99-a", "answer", f"Q?\n{BEGIN_MD}\nThe model answer.\n{END_MD}\n", 2)])
    nb = release.student_notebook(Exercise.load(path))
    assert nb.cells[0].source == f"Q?\n{release.ANSWER_PROMPT}\n"


@pytest.mark.parametrize("source, problem", [
    ("### BEGIN SOLUTION\nx = 1", "never closed"),
    ("x = 1\n### END SOLUTION", "without"),
    ("x = 1", "needs a"),
])
def test_malformed_solution_cells_are_rejected(notebook_file, source, problem):
    path = notebook_file("ex99_bad", [("code", "ex99-bad", "solution", source, None)])
    with pytest.raises(ExerciseFormatError, match=problem):
        Exercise.load(path)


def test_a_malformed_source_stops_the_release_before_anything_is_written(tmp_path, notebook_file, capsys):
    notebook_file("ex99_bad", [("code", "ex99-bad", "solution", "x = 1", None)], folder=tmp_path / "solutions")
    args = ["--solutions", str(tmp_path / "solutions"), "--exercises", str(tmp_path / "exercises")]
    assert release.main(args) == 2
    assert "needs a" in capsys.readouterr().err and not (tmp_path / "exercises").exists()


def test_ids_must_match_and_be_unique(tmp_path):
    cell = nbformat.v4.new_code_cell("x = 1", id="other")
    cell.metadata["course"] = {"id": "ex99-x", "kind": "locked"}
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), tmp_path / "ex99_x.ipynb")
    with pytest.raises(ExerciseFormatError, match="must equal"):
        Exercise.load(tmp_path / "ex99_x.ipynb")


def _hand_edit(path: Path, text: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(text))
    nbformat.write(nb, path)


def test_release_refuses_to_overwrite_an_answer_typed_into_exercises(tmp_path, capsys):
    """A student who answered in exercises/ loses nothing to `make release` / `make course`."""
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    answered = tmp_path / "exercises" / "ex02_diagnose.ipynb"
    _hand_edit(answered, "BREAKS = {'my answer': 1}")
    mine = answered.read_bytes()
    args = ["--solutions", str(ROOT / "solutions"), "--exercises", str(tmp_path / "exercises")]
    assert release.main(args) == 1
    err = capsys.readouterr().err
    assert "ex02_diagnose.ipynb" in err and "Nothing was written" in err and "work/" in err
    assert answered.read_bytes() == mine
    with pytest.raises(release.ChangedByHand) as raised:
        release.release_all(ROOT / "solutions", tmp_path / "exercises")
    assert raised.value.paths == [answered]
    # --force is the explicit way to discard it
    assert release.main([*args, "--force"]) == 0
    assert answered.read_bytes() == (ROOT / "exercises" / "ex02_diagnose.ipynb").read_bytes()


def test_a_changed_solution_still_releases_over_the_last_release(tmp_path):
    """The instructor's edit to a solution reaches exercises/: the file there is what the last release wrote."""
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    first = release.release_all(tmp_path / "solutions", tmp_path / "exercises")
    source = tmp_path / "solutions" / "ex02_diagnose.ipynb"
    nb = nbformat.read(source, as_version=4)
    nb.cells[0].source += "\n\nA clarification."
    nbformat.write(nb, source)
    second = release.release_all(tmp_path / "solutions", tmp_path / "exercises")
    assert first == second and "A clarification." in (tmp_path / "exercises" / "ex02_diagnose.ipynb").read_text()
    assert release.check_all(tmp_path / "solutions", tmp_path / "exercises") == []
