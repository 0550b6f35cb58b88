"""The sample maker: committed samples are current, expectations are consistent, the adversarial set is real."""

from __future__ import annotations

import json
from pathlib import Path

from course_grader.samples import make_samples
from course_grader.samples.adversarial import SAMPLES

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "tests" / "samples" / "submissions"


def test_committed_samples_match_a_fresh_generation(tmp_path):
    make_samples(ROOT / "solutions", tmp_path)
    fresh = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.name.startswith("bad-huge")}
    committed = {p.name: p.read_bytes() for p in COMMITTED.iterdir() if not p.name.startswith("bad-huge")}
    assert sorted(fresh) == sorted(committed), "sample set changed: run python -m course_grader.samples"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], f"stale samples (run python -m course_grader.samples): {stale}"


def test_expectations_are_consistent(exercises):
    expected = json.loads((COMMITTED / "expected.json").read_text())
    by_name = {ex.name: ex for ex in exercises.values()}
    for fname, want in expected.items():
        ex = by_name[fname.split("__")[1].removesuffix(".ipynb")]
        assert want["status"] in ("graded", "flagged", "rejected"), fname
        if "points" in want:
            assert 0 <= want["points"] <= ex.auto_points, fname
            score = "full" if want["points"] == ex.auto_points else "zero" if want["points"] == 0 else "partial"
            assert want["score"] == score, fname
        if want["status"] != "graded":
            assert want["score"] == "zero", fname


def test_at_least_25_adversarial_and_some_honest_unusual_samples():
    names = [s.name for s in SAMPLES]
    assert len(names) == len(set(names))
    assert sum(n.startswith("adv-") for n in names) >= 25
    assert sum(n.startswith("honest-") for n in names) >= 5
    assert all(s.why for s in SAMPLES)
