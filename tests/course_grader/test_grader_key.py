"""The attempt key includes a hash of the grading code: any change to the grader grades again."""

from __future__ import annotations

import shutil
from pathlib import Path

import course_grader
from course_grader import GRADER_VERSION, code_hash, grader_key

SRC = Path(course_grader.__file__).resolve().parent.parent


def _copy_of_src(tmp_path: Path) -> Path:
    for package in ("course_grader", "compile_course"):
        shutil.copytree(SRC / package, tmp_path / "src" / package, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "src"


def test_the_hash_covers_code_and_templates_but_not_caches(tmp_path):
    src = _copy_of_src(tmp_path)
    copy = src / "course_grader"
    before = code_hash(src)
    assert before == code_hash(SRC)
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"stale")
    assert code_hash(src) == before
    template = next(copy.rglob("*.j2"))
    template.write_text(template.read_text() + "\n")
    changed = code_hash(src)
    assert changed != before
    runner = copy / "verdict" / "testcells.py"
    runner.write_text(runner.read_text().replace("MAX_MESSAGE = 4000", "MAX_MESSAGE = 3999"))
    assert code_hash(src) not in (before, changed)


def test_the_hash_covers_the_test_api_that_judges_reports(tmp_path):
    """A test cell's verdict is decided in part by compile_course (the stopwatch judges ex05's figures):
    a change there grades again too."""
    src = _copy_of_src(tmp_path)
    before = code_hash(src)
    stopwatch = src / "compile_course" / "stopwatch" / "rules.py"
    assert "FASTER_SHARE = 0.25" in stopwatch.read_text()
    stopwatch.write_text(stopwatch.read_text().replace("FASTER_SHARE = 0.25", "FASTER_SHARE = 0.5"))
    assert code_hash(src) != before


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
