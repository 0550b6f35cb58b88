"""The next steps ``course grade`` prints (course_grader/ui/hints.py). Each is run as printed against a real
hub by tests/exchange/test_loop.py; these check the forms that test does not take."""

import shlex
from pathlib import Path

from course_grader.ui.hints import after_hand_back


def command(hint: str) -> list[str]:
    return shlex.split(hint.split(": ", 1)[1])


def test_the_default_folder_needs_no_grades_file_named(tmp_path):
    out = tmp_path / "graded"
    step = command(after_hand_back(out, tmp_path / "graded-hand-back"))
    assert step == ["course", "return", str(tmp_path / "graded-hand-back")]


def test_another_folder_names_the_grades_file_and_quotes_paths(tmp_path):
    out = tmp_path / "my graded"
    to = tmp_path / "for students"
    step = command(after_hand_back(out, to))
    assert step == ["course", "return", str(to), "--grades", str(out / "lms" / "grades.csv")]
    assert Path(step[4]).parent.parent == out
