"""The warm-up (pipeline.warmup): the model answers are graded first, verdicts only, and must get full marks."""

from __future__ import annotations

import pytest

from course_grader.errors import GraderError
from course_grader.verdict.context import TestVerdict


def test_the_model_answers_warm_the_cache_and_must_get_full_marks(tmp_path, submission, grade_fake, fake_host):
    submission("ned", "ex02")
    seen = []

    class Watch(fake_host):
        def notebook_kernel(self):
            seen.append(self.warm)
            return super().notebook_kernel()

    report = grade_fake(tmp_path / "subs", tmp_path / "out", host_factory=lambda *a: Watch())
    # the warm-up grades the model answers' verdicts only (below: it must give them full marks); the one
    # notebook kernel is ned's feedback run, after the warm-up
    assert seen == [False] and report.ok

    def broken(ex):
        def grade(ctx):
            return [TestVerdict(t.course_id, False, "no") for t in ex.tests]
        return grade, ex.id

    with pytest.raises(GraderError, match="model answers of ex02_diagnose do not get full marks"):
        grade_fake(tmp_path / "subs", tmp_path / "out2", verdict_for=broken)
