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


def test_the_default_jobs_is_one_a_usable_core_within_memory(monkeypatch):
    import os

    from course_grader import config

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    pages = {"SC_PHYS_PAGES": (3 * config.MEMORY_BYTES) // 4096, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert config.default_jobs() == 3 and GradeOptions().jobs == 3          # memory holds three runs
    pages["SC_PHYS_PAGES"] = (100 * config.MEMORY_BYTES) // 4096
    assert config.default_jobs() == 8                                       # eight cores
    pages["SC_PHYS_PAGES"] = 1
    assert config.default_jobs() == 1                                       # never none


def test_the_gradebook_and_results_defaults_are_declared_once(tmp_path):
    assert GradeOptions().gradebook_in(tmp_path) == tmp_path / "gradebook.sqlite"
    assert GradeOptions(gradebook=tmp_path / "b.sqlite").gradebook_in(tmp_path / "out") == tmp_path / "b.sqlite"
    assert GradeOptions.results_for(tmp_path / "fall").name == "fall"


def test_course_grade_leaves_unset_options_to_their_declared_defaults(tmp_path):
    from course_grader.ui.grade import given_options, parser

    given = given_options(parser().parse_args(["run", str(tmp_path)]))
    assert "jobs" not in given and "gradebook" not in given and "limits" not in given
    given = given_options(parser().parse_args(["run", str(tmp_path), "--jobs", "3", "--cpu-per-cell", "5"]))
    assert given["jobs"] == 3 and given["limits"].cpu_s_per_cell == 5
