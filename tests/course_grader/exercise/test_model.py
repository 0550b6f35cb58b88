"""The Exercise model: roles, points, validation, and the views every part of the grader reads."""

from __future__ import annotations

import pytest

from course_grader.errors import ExerciseFormatError
from course_grader.exercise.model import CellKind, Exercise, load_exercises


def test_every_solution_loads_with_ids_kinds_and_points(exercises):
    assert sorted(exercises) == ["ex01", "ex02", "ex03", "ex04", "ex05", "ex06", "ex07", "ex08", "ex09", "ex10"]
    for ex in exercises.values():
        assert ex.name.startswith(ex.id + "_") and len(ex.sha256) == 64
        assert ex.title and not ex.title.startswith("#")
        assert all(c.kind in (CellKind.TEST, CellKind.HIDDEN_TEST) and c.points > 0 for c in ex.tests)
        assert ex.auto_points == sum(c.points for c in ex.tests)
    assert exercises["ex06"].auto_points == 0 and exercises["ex06"].manual_points > 0
    assert [c.course_id for c in exercises["ex01"].hidden_tests] == ["ex01-hidden-boundary"]


def test_code_regions_and_answer_regions_are_read(exercises):
    rewrite = exercises["ex01"].cell("ex01-rewrite")
    assert rewrite.code_regions() and "BEGIN SOLUTION" not in rewrite.code_regions()[0]
    answer = exercises["ex06"].answers[0]
    assert answer.answer_region() and exercises["ex06"].question_for(answer)


@pytest.mark.parametrize("cells, problem", [
    ([("code", "ex99-t", "test", "pass", None)], "needs 'points'"),
    ([("code", "ex99-s", "solution", "### BEGIN SOLUTION\nx=1\n### END SOLUTION", 3)], "carries no points"),
    ([("code", "ex99-t", "test", "pass", -1)], "number >= 0"),
    ([("code", "ex99-t", "test", "pass", True)], "number >= 0"),
    ([("code", "ex99-x", "bogus", "pass", None)], "unknown kind"),
    ([("markdown", "ex99-a", "answer", "no region", 2)], "needs a"),
    ([("code", "ex99-a", "answer", "<!-- BEGIN SOLUTION -->x<!-- END SOLUTION -->", 2)], "markdown cell"),
    ([("markdown", "ex99-t", "test", "pass", 1)], "code cell"),
    ([("code", "ex99-l", "locked", "x = 1  ### BEGIN SOLUTION", None)], "outside"),
    ([("code", None, None, "### END SOLUTION", None)], "outside"),
    ([("code", "ex99-l", "locked", "x", None), ("code", "ex99-l", "locked", "y", None)], "not unique"),
    ([("code", None, None, "x = 1", None)], "no cell carries"),
])
def test_malformed_sources_are_refused_with_a_reason(notebook_file, cells, problem):
    path = notebook_file("ex99_bad", cells)
    with pytest.raises(ExerciseFormatError, match=problem):
        Exercise.load(path)


def test_a_file_not_named_like_an_exercise_is_refused(notebook_file):
    path = notebook_file("exercise_one", [("code", "ex99-l", "locked", "x", None)])
    with pytest.raises(ExerciseFormatError, match="named exNN_slug"):
        Exercise.load(path)


def test_two_solutions_for_one_exercise_are_refused(notebook_file, tmp_path):
    notebook_file("ex07_a", [("code", "ex07-l", "locked", "x", None)], folder=tmp_path / "s")
    notebook_file("ex07_b", [("code", "ex07-l", "locked", "x", None)], folder=tmp_path / "s")
    with pytest.raises(ExerciseFormatError, match="two solution notebooks"):
        load_exercises(tmp_path / "s")
