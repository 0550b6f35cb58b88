"""Every bundled sample through the real pipeline (sandbox, harnesses, verdicts): opt-in, it takes long.

    COURSE_SAMPLES_E2E=1 .venv/bin/python -m pytest tests/e2e/test_samples_e2e.py

Grading the 70 samples takes 10 to 20 minutes on a busy 2-core machine (each
submission also runs its feedback notebook; the two infinite loops use up the full
CPU limits and are re-run alone: about 7 minutes of it). This is the only place all of
them are graded, under the full limits: run it after changing the grader, the
sandbox or the samples. ``make test`` leaves it out; ``make course`` grades one sample
of each kind (``course_grader.samples.demo``, its infinite loop under a few CPU-seconds
a cell), with the same expectations (``samples.expectations.grade_samples`` here).
"""

from __future__ import annotations

import os

import pytest

from course_grader.samples.expectations import grade_samples

pytestmark = pytest.mark.skipif(os.environ.get("COURSE_SAMPLES_E2E") != "1",
                                reason="set COURSE_SAMPLES_E2E=1 to grade every sample end to end (10 to 20 min)")


def test_every_sample_gets_its_expected_verdict(tmp_path):
    line, ok = grade_samples(tmp_path / "samples-grading", jobs=2, progress=False)
    assert ok, line
