"""The released locked cells' note and ``course restore`` (course_grader.ui.restore): a locked or test
cell says why it takes no typing, a flag names the command that puts it back, and the command puts
back only that cell, keeping the student's answers, own cells and outputs."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from course_grader.exercise.model import CellKind, lock_note, without_lock_note
from course_grader.exercise.release import answered_notebook, student_notebook
from course_grader.intake.cells import check, normalized
from course_grader.ui import check as student
from course_tools.cli import main as course_main

ROOT = Path(__file__).resolve().parents[3]


def _by_id(nb) -> dict:
    return {c.metadata["course"]["id"]: c for c in nb.cells if "course" in c.metadata}


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb")))
def test_every_released_locked_and_test_code_cell_says_it_is_locked_and_how_to_get_it_back(name):
    nb = nbformat.read(ROOT / "exercises" / name, as_version=4)
    read_only = [c for c in nb.cells if c.metadata.get("course", {}).get("kind") in ("locked", "test")]
    assert read_only
    for cell in read_only:
        cid = cell.metadata["course"]["id"]
        assert cell.metadata["editable"] is False
        if cell.cell_type == "code":
            first = cell.source.split("\n", 1)[0]
            assert first == lock_note(name, cid), first
            assert "takes no typing" in first and f"course restore {name} --cell {cid}" in first
            assert without_lock_note(cell.source) == cell.source.split("\n", 1)[1]


def test_the_note_changes_no_comparison(exercises):
    """A copy with the note, one from before it and one whose note was deleted are all intact: no
    flag, no notice; and the note line alone cannot smuggle in an edit."""
    ex = exercises["ex01"]
    released = answered_notebook(ex)
    assert not check(ex, released).findings
    before = copy.deepcopy(released)
    for cell in before.cells:
        cell.source = without_lock_note(cell.source)
    assert before.cells != released.cells and not check(ex, before).findings
    edited = copy.deepcopy(released)
    setup = _by_id(edited)["ex01-setup"]
    setup.source = setup.source.replace("start()", "start()\nimport os", 1)
    [flag] = check(ex, edited).flags
    assert "locked cell edited" in flag.text
    assert "`course restore ex01_capture_boundary.ipynb --cell ex01-setup` puts it back" in flag.text
    assert normalized(lock_note("x.ipynb", "c") + "\nprint(1)") == "print(1)"


def _student_file(tmp_path, ex, edit) -> Path:
    nb = answered_notebook(ex)
    edit(nb)
    path = tmp_path / "work" / "exercises" / f"{ex.name}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return path


def test_restore_puts_back_an_edited_a_deleted_and_a_duplicated_cell_and_keeps_everything_else(
        tmp_path, exercises, capsys):
    ex = exercises["ex01"]
    mine = nbformat.v4.new_code_cell("# my experiment\nprint('hello')", id="mine1")

    def damage(nb):
        cells = _by_id(nb)
        cells["ex01-setup"].source += "\nimport os   # edited"
        cells["ex01-test-capture"].metadata["editable"] = True
        dup = copy.deepcopy(cells["ex01-test-capture"])
        dup.source = "print('my own check')"
        dup["id"] = "ex01-test-capture-2"
        at = nb.cells.index(cells["ex01-test-capture"])
        nb.cells.insert(at + 1, dup)
        nb.cells.insert(at + 1, mine)
        nb.cells.remove(cells["ex01-reference"])

    path = _student_file(tmp_path, ex, damage)
    before = nbformat.read(path, as_version=4)
    flags = check(ex, before).flags
    assert {f.where for f in flags} == {"ex01-setup", "ex01-reference", "ex01-test-capture"}
    assert all("course restore ex01_capture_boundary.ipynb --cell " + f.where in f.text for f in flags)

    assert course_main(["restore", str(path), "--cell", "ex01-setup", "--cell", "ex01-reference",
                        "--cell", "ex01-test-capture"]) == 0
    out = capsys.readouterr().out
    assert "ex01-reference: put back (it was deleted)" in out and "ex01-setup: restored as released" in out
    after = nbformat.read(path, as_version=4)
    assert not check(ex, after).flags
    released = _by_id(student_notebook(ex))
    cells = _by_id(after)
    for cid in ("ex01-setup", "ex01-reference", "ex01-test-capture"):
        assert cells[cid].source == released[cid].source and cells[cid].metadata == released[cid].metadata
    order = [c.metadata["course"]["id"] for c in after.cells if "course" in c.metadata]
    assert order == [c.metadata["course"]["id"] for c in student_notebook(ex).cells if "course" in c.metadata]
    # the answers, the student's own cell and the duplicate's text are all still there
    for cid, cell in _by_id(before).items():
        if ex.cell(cid).kind in (CellKind.SOLUTION, CellKind.ANSWER):
            assert cells[cid].source == cell.source
    sources = [c.source for c in after.cells]
    assert mine.source in sources and "print('my own check')" in sources
    assert len(after.cells) == len(before.cells) + 1


def test_restore_refuses_an_answer_cell_and_an_unknown_id_and_changes_nothing(tmp_path, exercises, capsys):
    ex = exercises["ex01"]
    path = _student_file(tmp_path, ex, lambda nb: None)
    raw = path.read_bytes()
    answer = next(c.course_id for c in ex.cells if c.kind is CellKind.SOLUTION)
    assert course_main(["restore", str(path), "--cell", answer]) == 2
    assert "yours to write" in capsys.readouterr().err
    assert course_main(["restore", str(path), "--cell", "nope"]) == 2
    assert "has no cell 'nope'" in capsys.readouterr().err
    assert course_main(["restore", str(path)]) == 2
    assert "--cell ID" in capsys.readouterr().err
    assert course_main(["restore", str(path), "--all"]) == 0
    assert "nothing changed" in capsys.readouterr().out and path.read_bytes() == raw


def test_course_check_names_the_restore_command(tmp_path, exercises, capsys):
    ex = exercises["ex06"]    # manually graded: course check needs no sandbox

    def edit(nb):
        setup = _by_id(nb)["ex06-setup"]
        setup.source += "\nx = 1"

    path = _student_file(tmp_path, ex, edit)
    assert student.check_main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "FLAG ex06-setup: locked cell edited" in out
    assert "course restore ex06_check_understanding.ipynb --cell ex06-setup" in out
    assert course_main(["restore", str(path), "--cell", "ex06-setup"]) == 0
    capsys.readouterr()
    student.check_main([str(path)])
    assert "locked and test cells: ok" in capsys.readouterr().out
