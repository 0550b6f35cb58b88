"""The attempt key includes a hash of the grading code: any change to the grader grades again."""

from __future__ import annotations

import shutil
from pathlib import Path

import course_grader
from course_grader import GRADER_VERSION, code_hash, grader_key

ROOT = Path(course_grader.__file__).resolve().parent


def test_the_hash_covers_code_and_templates_but_not_caches(tmp_path):
    copy = tmp_path / "course_grader"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_hash(copy)
    assert before == code_hash(ROOT)
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"stale")
    assert code_hash(copy) == before
    template = next(copy.rglob("*.j2"))
    template.write_text(template.read_text() + "\n")
    changed = code_hash(copy)
    assert changed != before
    runner = copy / "verdict" / "testcells.py"
    runner.write_text(runner.read_text().replace("MAX_MESSAGE = 4000", "MAX_MESSAGE = 3999"))
    assert code_hash(copy) not in (before, changed)


def test_the_key_keeps_the_version_for_humans_and_is_computed_once():
    assert grader_key().startswith(GRADER_VERSION + "+")
    assert grader_key() is grader_key()


def test_a_changed_grader_regrades_instead_of_keeping_old_verdicts(tmp_path, submission, grade_fake, monkeypatch):
    import course_grader.pipeline.grade_class as grading
    submission("rae", "ex01")
    first = grade_fake(tmp_path / "subs", tmp_path / "out")
    assert len(first.graded) == 1
    assert grade_fake(tmp_path / "subs", tmp_path / "out").skipped == 1
    monkeypatch.setattr(grading, "grader_key", lambda: GRADER_VERSION + "+another-grader")
    again = grade_fake(tmp_path / "subs", tmp_path / "out")
    assert len(again.graded) == 1 and again.skipped == 0
