"""course run's demonstration grading: one bundled sample of each kind, chosen by a rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from course_grader.samples.demo import (
    DEMO_LIMITS,
    KINDS,
    LIMITED_FOLDER,
    grade_demo,
    representative,
    runs_out_of_cpu,
    sample_exercise,
    sample_kind,
)
from course_grader.sandbox.limits import Limits

ROOT = Path(__file__).resolve().parents[3]
EXPECTED = json.loads((ROOT / "tests" / "samples" / "submissions" / "expected.json").read_text())


def test_every_kind_of_sample_is_known_to_the_demo():
    # a new kind of sample must be placed in KINDS (it would be graded last, unnamed, otherwise)
    assert {sample_kind(name) for name in EXPECTED} == set(KINDS)


def test_the_demo_takes_one_sample_of_each_kind_across_the_exercises():
    chosen = representative(EXPECTED)
    assert [sample_kind(name) for name in chosen] == list(KINDS)
    assert len({sample_exercise(name) for name in chosen}) >= 5      # ex01..ex05: every auto-graded exercise
    crash = chosen[KINDS.index("crash")]
    assert runs_out_of_cpu(EXPECTED[crash]) and "infinite-loop" in crash
    assert [name for name in chosen if runs_out_of_cpu(EXPECTED[name])] == [crash]
    bad = chosen[KINDS.index("bad")]
    assert EXPECTED[bad]["reason"]                                      # the grader must also say why


def test_the_rule_prefers_a_cpu_limit_then_a_new_exercise_then_a_reason():
    expected = {
        "correct__ex01_a.ipynb": {"status": "graded", "score": "full"},
        "correct__ex02_b.ipynb": {"status": "graded", "score": "full"},
        "bad-x__ex01_a.ipynb": {"status": "rejected", "score": "zero"},
        "bad-y__ex02_b.ipynb": {"status": "rejected", "score": "zero"},
        "bad-z__ex02_b.ipynb": {"status": "rejected", "score": "zero", "reason": "PNG"},
        "crash-a__ex01_a.ipynb": {"status": "graded", "score": "zero", "reason": "memory"},
        "crash-b__ex01_a.ipynb": {"status": "graded", "score": "zero", "reason": "cpu|time"},
        "zany-q__ex03_c.ipynb": {"status": "graded", "score": "zero"},
    }
    assert representative(expected) == ["correct__ex01_a.ipynb", "bad-z__ex02_b.ipynb", "crash-b__ex01_a.ipynb",
                                         "zany-q__ex03_c.ipynb"]


def test_demo_limits_are_a_few_cpu_seconds_not_the_full_ones():
    assert DEMO_LIMITS.cpu_s_per_cell < Limits().cpu_s_per_cell
    assert DEMO_LIMITS.wall_s_backstop < Limits().wall_s_backstop
    assert DEMO_LIMITS.memory_bytes == Limits().memory_bytes          # only time is shortened


def test_demo_grading_grades_the_cpu_limit_sample_apart_and_writes_one_index(tmp_path, fake_host, stub_verdicts):
    limits_seen = []

    def host(hide, cache, limits):
        limits_seen.append(limits)
        return fake_host()

    out = tmp_path / "samples-grading"
    line, ok = grade_demo(out, jobs=2, progress=False, host_factory=host, verdict_for=stub_verdicts)
    assert line.startswith(f"{len(KINDS)} of the {len(EXPECTED)} samples, one of each kind: ")
    assert not ok                                   # stub verdicts cannot give the crash sample its CPU-limit reason
    assert limits_seen == [Limits(), DEMO_LIMITS]   # the class under the full limits, the loop under the demo's
    chosen = representative(EXPECTED)
    main = sorted(p.name for p in (out / "submissions").glob("*.ipynb"))
    limited = sorted(p.name for p in (out / LIMITED_FOLDER).glob("*.ipynb"))
    assert limited == [n for n in chosen if runs_out_of_cpu(EXPECTED[n])] and sorted(main + limited) == sorted(chosen)
    assert json.loads((out / LIMITED_FOLDER / "expected.json").read_text()) == {n: EXPECTED[n] for n in limited}
    index = (out / "feedback" / "index.html").read_text()
    assert all(name.split("__")[0] in index for name in chosen)     # both grading calls' students in one index
    grades = (out / "grades.csv").read_text()
    assert all(name.split("__")[0] in grades for name in chosen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples-grading"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root (docs/sandbox.md)")
def test_the_infinite_loop_gets_its_expected_reason_under_the_demo_limits(tmp_path):
    """The real sandbox: the loop sample, graded as course run grades it, still gets zero and a CPU reason."""
    from course_grader.exercise.model import load_exercises
    from course_grader.pipeline.grade_class import grade_class
    from course_grader.results.gradebook import Gradebook
    from course_grader.samples import notebook_bytes, samples_for
    from course_grader.samples.expectations import check_expectations

    every = samples_for(load_exercises(ROOT / "solutions"))
    name = next(n for n in representative(EXPECTED) if runs_out_of_cpu(EXPECTED[n]))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / name).write_bytes(notebook_bytes(every[name][0]))
    report = grade_class(subs, tmp_path / "out", progress=False, limits=DEMO_LIMITS, warm=False)
    assert report.ok, report.faults
    with Gradebook(report.gradebook) as book:
        assert check_expectations(book, {name: EXPECTED[name]}) == []
        (row,) = book.current()
    assert "CPU time" in row["reason"], row["reason"]
