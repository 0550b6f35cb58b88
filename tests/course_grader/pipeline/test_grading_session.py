"""GradingSession (pipeline.session), one submission's sequence: matching that breaks is a rejection, verdict
code that misbehaves is a grader fault, equal measuring requests are answered once per run (its ReplyCache)."""

from __future__ import annotations

from course_grader.pipeline.grade_class import grade_class
from course_grader.verdict.context import TestVerdict


def test_a_notebook_that_breaks_matching_is_a_rejection(tmp_path, submission, grade_fake, monkeypatch):
    import course_grader.pipeline.submission as submission_step

    submission("una", "ex01")
    monkeypatch.setattr(submission_step, "check", lambda ex, nb: (_ for _ in ()).throw(TypeError("odd cell")))
    report = grade_fake(tmp_path / "subs", tmp_path / "out", warm=False)
    assert report.ok and report.graded[0].status == "rejected" and "TypeError" in report.graded[0].reason


def test_verdict_code_that_misses_a_test_is_a_grader_fault(tmp_path, submission, grade_fake):
    submission("oz", "ex01")

    def partial(ex):
        def grade(ctx):
            return [TestVerdict(ex.tests[0].course_id, True, "")]
        return grade, ex.id

    report = grade_fake(tmp_path / "subs", tmp_path / "out", verdict_for=partial, warm=False)
    assert not report.ok and "the exercise grades" in report.faults[0]


def test_equal_measuring_requests_are_answered_once_per_run(tmp_path, submission, fake_host):
    calls = []

    class Counting(fake_host):
        def measure(self, harness, entry, payload):
            calls.append((entry, payload.get("who")))
            return {"ok": True}

    def verdicts(ex):
        def grade(ctx):
            ctx.measure("reference", {})                                   # the same for everyone
            ctx.measure("student", {"who": ctx.cells.get("ex01-rewrite", "")[-40:]})
            return [TestVerdict(t.course_id, True, "") for t in ex.tests]
        return grade, ex.id

    for s in ("pat", "quin", "ros"):
        submission(s, "ex01", answered=s != "ros")
    report = grade_class(tmp_path / "subs", tmp_path / "out", jobs=2, progress=False,
                         host_factory=lambda *a: Counting(), verdict_for=verdicts)
    assert report.ok and [e for e, _ in calls].count("reference") == 1
    assert [e for e, _ in calls].count("student") == 2      # the model answer (warm-up) and ros's stub
    assert report.cached_replies == 5                        # 3 references + 2 model-equal answers
