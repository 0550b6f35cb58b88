"""Scheduling (pipeline.schedule): a job whose measuring child timed out or died is graded once more, alone;
a transient fault costs nothing, a confirmed one is worded for the student, a grader fault is never a grade."""

from __future__ import annotations

import threading
import time

import pytest

from course_grader.errors import SandboxFault
from course_grader.pipeline.grade_class import grade_class
from course_grader.results.gradebook import Gradebook
from course_grader.status import FaultKind
from course_grader.verdict.context import TestVerdict


@pytest.fixture
def faulty_host(fake_host):
    class FaultyHost(fake_host):
        """``measure`` raises ``kind`` on its first ``fail_times`` calls; records whether others ran meanwhile."""

        def __init__(self, kind, fail_times):
            super().__init__()
            self.kind, self.fail_times, self.calls = kind, fail_times, 0
            self.active, self.lock, self.overlaps = 0, threading.Lock(), []

        def measure(self, harness, entry, payload):
            with self.lock:
                self.calls += 1
                n = self.calls
                self.active += 1
                self.overlaps.append((n, self.active))
            try:
                time.sleep(0.05)
                if n <= self.fail_times and not self.warm:
                    raise SandboxFault(self.kind, "your code used 120 s of CPU in measure")
                return {"ok": True}
            finally:
                with self.lock:
                    self.active -= 1

    return FaultyHost


def measuring_verdicts(ex):
    def grade(ctx):
        try:
            ok = ctx.measure("probe", {})["ok"]
            msg = ""
        except SandboxFault as fault:
            ok, msg = False, str(fault)
        return [TestVerdict(t.course_id, ok, msg) for t in ex.tests]

    return grade, ex.id


def test_a_timeout_is_rerun_alone_and_the_reason_names_the_student(tmp_path, submission, faulty_host):
    for s in ("ida", "jon", "kai"):
        submission(s, "ex01")
    host = faulty_host(FaultKind.CPU_TIME, fail_times=10**6)
    report = grade_class(tmp_path / "subs", tmp_path / "out", jobs=2, progress=False, warm=False,
                         host_factory=lambda *a: host, verdict_for=measuring_verdicts)
    assert sorted(report.retried) == sorted(p.name for p in (tmp_path / "subs").iterdir())
    with Gradebook(report.gradebook) as book:
        rows = book.current()
    assert all(r["auto_score"] == 0 and "your code used up its CPU time" in r["reason"]
               and "second run, alone" in r["reason"] for r in rows)
    retry_calls = [active for n, active in host.overlaps if n > 3]
    assert retry_calls and max(retry_calls) == 1           # second runs had no company


def test_a_transient_fault_costs_nothing(tmp_path, submission, faulty_host):
    submission("lou", "ex01")
    host = faulty_host(FaultKind.CRASHED, fail_times=1)
    report = grade_class(tmp_path / "subs", tmp_path / "out", jobs=1, progress=False, warm=False,
                         host_factory=lambda *a: host, verdict_for=measuring_verdicts)
    assert report.retried and report.graded[0].auto_score == 8 and report.graded[0].reason == ""


def test_a_grader_fault_is_never_recorded_as_a_grade(tmp_path, submission, faulty_host):
    submission("max", "ex01")
    host = faulty_host(FaultKind.GRADER, fail_times=10**6)
    report = grade_class(tmp_path / "subs", tmp_path / "out", jobs=1, progress=False, warm=False,
                         host_factory=lambda *a: host, verdict_for=measuring_verdicts)
    assert not report.ok and "not your fault" in report.faults[0]
    with Gradebook(report.gradebook) as book:
        assert book.current() == []          # the next run grades it again
