"""The check record (course_grader.ui.check_record): what the last ``course check`` of a workspace file said."""

from __future__ import annotations

import json
import stat

from course_grader.ui import check_record
from course_grader.ui.check_record import RECORD_NAME, Outcome


def test_a_check_inside_the_workspace_is_recorded_and_read_back(tmp_path):
    (tmp_path / "exercises").mkdir()
    nb = tmp_path / "exercises" / "ex01_capture_boundary.ipynb"
    nb.write_text("{}")
    entry = check_record.record(nb, "ab" * 32, Outcome.FAILS, 2.0, 5.0, workspace=tmp_path)
    assert entry is not None and entry.path == "exercises/ex01_capture_boundary.ipynb"
    again = check_record.record(nb, "cd" * 32, Outcome.PASSES, 5.0, 5.0, workspace=tmp_path)
    assert check_record.read(tmp_path) == {entry.path: again}          # the last check of a file is kept
    assert stat.S_IMODE((tmp_path / RECORD_NAME).stat().st_mode) == 0o600


def test_a_file_outside_the_workspace_is_not_recorded(tmp_path):
    (tmp_path / "ws").mkdir()
    elsewhere = tmp_path / "ex01_capture_boundary.ipynb"
    elsewhere.write_text("{}")
    assert check_record.record(elsewhere, "00" * 32, Outcome.PASSES, 5, 5, workspace=tmp_path / "ws") is None
    assert not (tmp_path / "ws" / RECORD_NAME).exists()


def test_a_record_of_another_schema_or_broken_reads_as_empty(tmp_path):
    (tmp_path / RECORD_NAME).write_text(json.dumps({"schema": check_record.SCHEMA + 1, "checks": {"x": {}}}))
    assert check_record.read(tmp_path) == {}
    (tmp_path / RECORD_NAME).write_text("{not json")
    assert check_record.read(tmp_path) == {}
