"""The student's workspace (``course workspace``): copies in what is new, never overwrites the student's work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from compile_course import workspace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def course(tmp_path):
    """A small copy of the course: two lessons, one exercise, the student guide."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "exercises").mkdir()
    (root / "docs").mkdir()
    for name in ("01_lesson_goals.ipynb", "03_capture_boundary.ipynb"):
        shutil.copy2(ROOT / "notebooks" / name, root / "notebooks" / name)
    shutil.copy2(ROOT / "exercises" / "ex02_diagnose.ipynb", root / "exercises" / "ex02_diagnose.ipynb")
    shutil.copy2(ROOT / "docs" / "students.md", root / "docs" / "students.md")
    return root


def _answer(path: Path, text: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(text))
    nbformat.write(nb, path)


def test_first_sync_mirrors_the_course_layout(course, tmp_path):
    work = tmp_path / "work"
    report = workspace.sync(work, course)
    assert sorted(report.added) == ["docs/students.md", "exercises/ex02_diagnose.ipynb",
                                    "notebooks/01_lesson_goals.ipynb", "notebooks/03_capture_boundary.ipynb"]
    for rel in report.added:
        assert (work / rel).read_bytes() == (course / rel).read_bytes()
    # the lessons' relative links resolve inside the workspace as they do in the checkout
    lesson = (work / "notebooks" / "01_lesson_goals.ipynb").read_text()
    assert "../exercises/ex02_diagnose.ipynb" in lesson
    assert (work / "notebooks" / "../exercises/ex02_diagnose.ipynb").resolve().is_file()
    again = workspace.sync(work, course)
    assert again.added == again.updated == again.kept == [] and again.unchanged == 4


def test_the_students_answer_survives_every_later_sync(course, tmp_path):
    work = tmp_path / "work"
    workspace.sync(work, course)
    mine = work / "exercises" / "ex02_diagnose.ipynb"
    _answer(mine, "BREAKS = {'mine': 1}")
    answered = mine.read_bytes()
    # nothing new upstream: the student's file is theirs, not reported as a conflict
    report = workspace.sync(work, course)
    assert mine.read_bytes() == answered and report.kept == [] and report.yours == 1
    # the course changes the same exercise: still never overwritten, and the sync says so
    _answer(course / "exercises" / "ex02_diagnose.ipynb", "# a clarification from the instructor")
    report = workspace.sync(work, course)
    assert mine.read_bytes() == answered
    assert report.kept == ["exercises/ex02_diagnose.ipynb"]
    assert any("KEPT YOURS" in line and "ex02_diagnose" in line for line in report.lines())


def test_an_unchanged_copy_takes_the_courses_new_version(course, tmp_path):
    work = tmp_path / "work"
    workspace.sync(work, course)
    _answer(course / "notebooks" / "03_capture_boundary.ipynb", "# fixed upstream")
    report = workspace.sync(work, course)
    assert report.updated == ["notebooks/03_capture_boundary.ipynb"]
    assert (work / "notebooks" / "03_capture_boundary.ipynb").read_bytes() == \
        (course / "notebooks" / "03_capture_boundary.ipynb").read_bytes()


def test_a_deleted_file_is_restored_and_the_students_own_files_are_left_alone(course, tmp_path):
    work = tmp_path / "work"
    workspace.sync(work, course)
    (work / "notebooks" / "01_lesson_goals.ipynb").unlink()
    scratch = work / "notebooks" / "my_notes.ipynb"
    scratch.write_text("not even a notebook")
    report = workspace.sync(work, course)
    assert report.restored == ["notebooks/01_lesson_goals.ipynb"]
    assert scratch.read_text() == "not even a notebook"


def test_a_lost_record_never_turns_into_an_overwrite(course, tmp_path):
    """Without the record, a file that differs from the course is presumed the student's."""
    work = tmp_path / "work"
    workspace.sync(work, course)
    mine = work / "exercises" / "ex02_diagnose.ipynb"
    _answer(mine, "BREAKS = {}")
    answered = mine.read_bytes()
    (work / workspace.STATE_NAME).write_text("{not json")
    _answer(course / "exercises" / "ex02_diagnose.ipynb", "# upstream change")
    report = workspace.sync(work, course)
    assert mine.read_bytes() == answered and report.kept == ["exercises/ex02_diagnose.ipynb"]
    assert json.loads((work / workspace.STATE_NAME).read_text())  # the record is written again


def test_refresh_moves_the_students_copy_aside_then_takes_the_course_version(course, tmp_path):
    work = tmp_path / "work"
    workspace.sync(work, course)
    mine = work / "exercises" / "ex02_diagnose.ipynb"
    _answer(mine, "BREAKS = {'kept': 1}")
    answered = mine.read_bytes()
    moved = workspace.refresh("ex02_diagnose.ipynb", work, course)
    assert moved is not None and moved.read_bytes() == answered and moved.parent == mine.parent
    assert mine.read_bytes() == (course / "exercises" / "ex02_diagnose.ipynb").read_bytes()
    with pytest.raises(KeyError):
        workspace.refresh("ex99_nothing.ipynb", work, course)
