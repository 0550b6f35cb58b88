"""Reading a submission: size before hash, no link followed, every bad content a rejection (never an exception)."""

from __future__ import annotations

import json
import os

import pytest

from course_grader.intake.discover import discover
from course_grader.intake.load import read_submission


def _load(tmp_path, content: bytes, name="lee__ex01_capture_boundary.ipynb", **kw):
    (tmp_path / name).write_bytes(content)
    [cand], _ = discover(tmp_path)
    return read_submission(cand, **kw)


GOOD = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": ["x = ", "1"], "outputs": [],
                   "execution_count": None}]}


def test_a_valid_notebook_is_read_and_hashed(tmp_path):
    loaded = _load(tmp_path, json.dumps(GOOD).encode())
    assert loaded.ok and len(loaded.sha256) == 64 and loaded.notebook["cells"][0]["source"] == "x = 1"


@pytest.mark.parametrize("content, reason", [
    (b"", "empty file"),
    (b"   \n", "empty file"),
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "PNG"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b'{"cells": [', "invalid JSON"),
    (b"[1, 2, 3]", "without notebook cells"),
    (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "nbformat 3"),
    (json.dumps({"nbformat": 4, "cells": [1, 2]}).encode(), "malformed cell list"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}).encode(), "not text"),
    (b"[" * 100_000 + b"]" * 100_000, "nested"),
    (b'{"nbformat": 4, "cells": [], "metadata": ' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}", "nested"),
])
def test_bad_contents_are_rejected_with_a_reason(tmp_path, content, reason):
    loaded = _load(tmp_path, content)
    assert not loaded.ok and reason in loaded.reason


def test_the_size_is_checked_before_a_byte_is_read(tmp_path, monkeypatch):
    reads = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    loaded = _load(tmp_path, b"{" + b" " * 2000 + b"}", max_bytes=1000)
    assert "too large" in loaded.reason and loaded.sha256 == "" and reads == []


def test_a_file_swapped_for_a_symlink_after_discovery_is_not_followed(tmp_path):
    (tmp_path / "target.json").write_text(json.dumps(GOOD))
    (tmp_path / "subs").mkdir()
    path = tmp_path / "subs" / "mo__ex01_x.ipynb"
    path.write_text(json.dumps(GOOD))
    [cand], _ = discover(tmp_path / "subs")
    path.unlink()
    path.symlink_to(tmp_path / "target.json")
    loaded = read_submission(cand)
    assert not loaded.ok and "symbolic link" in loaded.reason


def test_an_unreadable_file_is_a_rejection(tmp_path, monkeypatch):
    (tmp_path / "ned__ex01_x.ipynb").write_text(json.dumps(GOOD))
    [cand], _ = discover(tmp_path)
    real_open = os.open

    def deny(path, flags, *a):
        if str(path).endswith("ned__ex01_x.ipynb"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a)

    monkeypatch.setattr(os, "open", deny)
    loaded = read_submission(cand)
    assert not loaded.ok and loaded.reason == "unreadable: permission denied"
