"""course_grader.api: the grader's public interface, as the hub exchange calls it."""


import pytest

from compile_course.paths import ROOT
from course_grader import api


def test_exercises_are_the_courses():
    found = api.exercises()
    assert "ex02" in found and found["ex02"].name == "ex02_diagnose" and found["ex02"].points > 0


def test_released_stub_is_taken_with_warnings():
    check = api.check_handin(ROOT / "exercises" / "ex02_diagnose.ipynb", "alice", "ex02_diagnose.ipynb")
    assert check.ok and check.exercise.id == "ex02" and len(check.sha256) == 64
    assert any("not answered" in w for w in check.warnings)


def test_bytes_that_are_no_notebook_are_refused_with_the_graders_reason():
    check = api.check_handin(b"not json", "alice", "ex02_diagnose.ipynb")
    assert not check.ok and "invalid JSON" in check.refused


def test_oversized_upload_is_refused_before_it_is_written():
    check = api.check_handin(b"x" * 101, "alice", "ex02_diagnose.ipynb", max_bytes=100)
    assert not check.ok and "at most 100 bytes" in check.refused


@pytest.mark.parametrize("student, name, words", [
    ("alice", "../../ex99_x.ipynb", "no exercise ex99"),
    ("alice", "notes.txt", "not a notebook name"),
    ("al ice", "ex02_diagnose.ipynb", "not allowed"),
    ("a__b", "ex02_diagnose.ipynb", "no '__'"),
])
def test_usage_problems_raise_with_their_reason(student, name, words):
    with pytest.raises(api.HandinError, match=words):
        api.check_handin(b"{}", student, name)


def test_a_path_in_the_uploaded_name_is_not_followed(tmp_path):
    check = api.check_handin((ROOT / "exercises" / "ex02_diagnose.ipynb").read_bytes(), "alice",
                             "../../etc/ex02_diagnose.ipynb")
    assert check.ok and check.exercise.id == "ex02"


def test_hand_back_folders_need_the_marker(tmp_path):
    with pytest.raises(api.HandinError, match="not a hand-back folder"):
        api.hand_back_folders(tmp_path)
    (tmp_path / ".course-hand-back").write_text("x")
    (tmp_path / "alice").mkdir()
    (tmp_path / "bad name").mkdir()
    assert api.hand_back_folders(tmp_path) == {"alice": tmp_path / "alice"}


def test_handin_name_is_read_back_by_the_grader():
    assert api.handin_name("alice", "ex02_diagnose") == "alice__ex02_diagnose.ipynb"
