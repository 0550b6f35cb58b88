"""Grade every bundled sample (built from the real solutions/) and check each verdict (about 2 minutes on 2 cores)."""

import json
from pathlib import Path

import pytest

from compile_course.grading.gradebook import Gradebook
from compile_course.grading.run import Limits
from compile_course.grading.samples import grade_samples

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not list((ROOT / "solutions").glob("ex[0-9][0-9]*.ipynb")):
        pytest.skip("no solutions yet")
    out = tmp_path_factory.mktemp("samples")
    line, ok = grade_samples(out, jobs=2, progress=False, limits=Limits(cell_timeout=30, submission_timeout=240))
    return out, line, ok


def test_every_sample_gets_its_expected_verdict(graded):
    out, line, ok = graded
    assert ok, line
    expected = json.loads((out / "submissions" / "expected.json").read_text())
    rows = {Path(r["path"]).name: r for r in Gradebook(out / "gradebook.sqlite").current()}
    assert set(rows) == set(expected)
    for name, row in rows.items():
        kind = name.split("__")[0]
        if kind == "correct":
            assert row["auto_score"] == row["auto_possible"], name
        if kind.startswith(("tamper-", "bad-", "crash-")) or kind == "unanswered":
            assert row["auto_score"] == 0, name
        if kind.startswith("tamper-"):
            assert row["status"] == "flagged" and json.loads(row["flags"]), name
        if kind.startswith("bad-"):
            assert row["status"] == "rejected" and row["reason"], name


def test_regrading_the_samples_is_idempotent(graded):
    out, _, _ = graded
    before = Gradebook(out / "gradebook.sqlite").snapshot()
    line, ok = grade_samples(out, jobs=2, progress=False)
    assert ok and "0 new" in line
    assert Gradebook(out / "gradebook.sqlite").snapshot() == before
