"""The committed sample submissions are exactly what make_samples.py generates today."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples"


def _make_samples():
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_samples


def test_committed_samples_match_a_fresh_generation(tmp_path):
    _make_samples()(ROOT / "solutions", tmp_path)
    fresh = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.name.startswith("bad-huge")}
    committed = {p.name: p.read_bytes() for p in (SAMPLES / "submissions").iterdir() if not p.name.startswith("bad-huge")}
    assert sorted(fresh) == sorted(committed), "sample set changed: run tests/samples/make_samples.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], f"stale samples (run tests/samples/make_samples.py): {stale}"
