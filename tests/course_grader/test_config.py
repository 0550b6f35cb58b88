"""``course_grader.config.GradeOptions``: one typed value for a grading run's settings."""

from __future__ import annotations

import inspect

import pytest

from course_grader.config import GradeOptions, describe
from course_grader.pipeline.grade_class import grade_class


def test_every_setting_says_what_it_does():
    docs = describe()
    assert list(docs) == [name for name in GradeOptions.__dataclass_fields__]
    assert all(len(text) > 10 for text in docs.values())


def test_grade_class_takes_one_options_value():
    params = list(inspect.signature(grade_class).parameters)
    assert params == ["submissions_dir", "out_dir", "options", "settings"]


def test_an_unknown_setting_is_refused_before_anything_is_created(tmp_path):
    with pytest.raises(TypeError, match="bogus"):
        grade_class(tmp_path / "subs", tmp_path / "out", bogus=1)
    assert not (tmp_path / "out").exists()


def test_a_setting_given_by_name_replaces_the_options_field():
    from dataclasses import replace

    base = GradeOptions(jobs=2, title="a class")
    assert replace(base, jobs=1) == GradeOptions(jobs=1, title="a class")
