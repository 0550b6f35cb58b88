import json

import pytest

from compile_course.grading.load import Found, discover, read_submission


def _found(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return Found("alice", "ex01", path)


def test_discover_both_layouts(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "ex01_capture_boundary.ipynb").write_text("{}")
    (tmp_path / "bob__ex02_diagnose (1).ipynb").write_text("{}")
    (tmp_path / "stray.ipynb").write_text("{}")
    (tmp_path / "alice" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "alice" / ".ipynb_checkpoints" / "ex01_capture_boundary-checkpoint.ipynb").write_text("{}")
    got = {(f.student, f.exercise) for f in discover(tmp_path)}
    assert got == {("alice", "ex01"), ("bob", "ex02"), ("?", "stray.ipynb")}


@pytest.mark.parametrize("data, reason", [
    (b"", "empty file"),
    (b"   \n", "empty file"),
    (b'{"cells": [', "invalid JSON"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "PNG image"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"[1, 2]", "not a notebook"),
    (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "nbformat 3"),
    (json.dumps({"nbformat": 4, "cells": [{"source": "x"}]}).encode(), "malformed cell list"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}).encode(), "not text"),
])
def test_bad_input_is_rejected_with_a_reason(tmp_path, data, reason):
    loaded = read_submission(_found(tmp_path, "x.ipynb", data))
    assert loaded.notebook is None
    assert reason in loaded.reason


def test_size_cap_applies_before_parsing(tmp_path):
    loaded = read_submission(_found(tmp_path, "x.ipynb", b"{" + b" " * 2000 + b"}"), max_bytes=1000)
    assert "too large" in loaded.reason


def test_student_id_must_be_safe(tmp_path):
    path = tmp_path / "x.ipynb"
    path.write_text("{}")
    assert "cannot tell the student" in read_submission(Found("?", "ex01", path)).reason


def test_valid_notebook_with_list_sources(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": None, "source": ["x = 1\n", "y = 2"]}]}
    loaded = read_submission(_found(tmp_path, "x.ipynb", json.dumps(nb).encode()))
    assert loaded.reason == "" and loaded.notebook["cells"][0]["source"] == "x = 1\ny = 2"
    assert len(loaded.sha256) == 64
