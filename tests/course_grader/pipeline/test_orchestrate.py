"""grade_class: one pipeline; batches always finish; duplicates, retries and warm-up behave as documented."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

from course_grader.errors import GraderError
from course_grader.pipeline.grade_class import default_out_dir, grade_class
from course_grader.results.gradebook import Gradebook
from course_grader.sandbox import SandboxFault
from course_grader.status import FaultKind
from course_grader.verdict.context import TestVerdict


def test_bad_files_are_rejections_and_the_batch_finishes(tmp_path, submission, grade_fake):
    submission("good", "ex01")
    subs = tmp_path / "subs"
    (subs / "dir__ex01_x.ipynb").mkdir()
    os.mkfifo(subs / "fifo__ex01_x.ipynb")
    (subs / "link__ex01_x.ipynb").symlink_to(subs / "good__ex01_capture_boundary.ipynb")
    (subs / "deep__ex01_x.ipynb").write_text('{"nbformat": 4, "cells": ' + "[" * 20000 + "]" * 20000 + "}")
    (subs / "ghost__ex99_x.ipynb").write_text("{}")   # no exercise ex99
    report = grade_fake(subs, tmp_path / "out")
    assert report.ok
    with Gradebook(report.gradebook) as book:
        rows = {r["student"]: r for r in book.current()}
    assert rows["good"]["status"] == "graded" and rows["good"]["auto_score"] == 8
    assert rows["dir"]["reason"] == "a folder, not a regular file"
    assert rows["fifo"]["reason"] == "a FIFO (named pipe), not a regular file"
    assert rows["link"]["reason"] == "a symbolic link, not a regular file"
    assert "nested" in rows["deep"]["reason"]
    assert rows["ghost"]["reason"].startswith("no exercise matches")
    assert all(rows[s]["status"] == "rejected" for s in ("dir", "fifo", "link", "deep", "ghost"))


def _dupes(tmp_path, submission):
    subs = tmp_path / "subs"
    submission("hal", "ex01", answered=False)
    (subs / "hal").mkdir()
    newer = submission("hal", "ex01", folder=subs / "hal").rename(subs / "hal" / "ex01_capture_boundary.ipynb")
    os.utime(subs / "hal__ex01_capture_boundary.ipynb", ns=(1_000_000_000, 1_000_000_000))
    os.utime(newer, ns=(2_000_000_000, 2_000_000_000))
    shutil.copy(newer, subs / "hal" / "ex01_capture_boundary (copy).ipynb")
    os.utime(subs / "hal" / "ex01_capture_boundary (copy).ipynb", ns=(2_000_000_000, 2_000_000_000))
    return subs


def test_duplicates_are_reported_and_the_choice_ignores_jobs_and_resume(tmp_path, submission, grade_fake):
    subs = _dupes(tmp_path, submission)
    outcomes = []
    for jobs, out in ((1, "a"), (2, "b"), (2, "a")):       # the third run is a resume of the first
        report = grade_fake(subs, tmp_path / out, jobs=jobs)
        assert len(report.duplicates) == 1 and "ignored" in report.duplicates[0]
        with Gradebook(report.gradebook) as book:
            [row] = book.current()
            outcomes.append((row["path"], row["auto_score"], row["ignored"]))
    assert len(set(outcomes)) == 1
    assert outcomes[0][0] == "hal/ex01_capture_boundary (copy).ipynb" and outcomes[0][1] == 8


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


def test_verdict_code_that_misses_a_test_is_a_grader_fault(tmp_path, submission, grade_fake):
    submission("oz", "ex01")

    def partial(ex):
        def grade(ctx):
            return [TestVerdict(ex.tests[0].course_id, True, "")]
        return grade, ex.id

    report = grade_fake(tmp_path / "subs", tmp_path / "out", verdict_for=partial, warm=False)
    assert not report.ok and "the exercise grades" in report.faults[0]


def test_a_class_goes_to_its_own_folder_never_the_samples(tmp_path):
    out = default_out_dir(tmp_path / "fall-2026")
    assert out.name == "fall-2026" and out.parent.name == "grading" and "samples" not in str(out)


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


def test_a_notebook_that_breaks_matching_is_a_rejection(tmp_path, submission, grade_fake, monkeypatch):
    import course_grader.pipeline.submission as submission_step

    submission("una", "ex01")
    monkeypatch.setattr(submission_step, "check", lambda ex, nb: (_ for _ in ()).throw(TypeError("odd cell")))
    report = grade_fake(tmp_path / "subs", tmp_path / "out", warm=False)
    assert report.ok and report.graded[0].status == "rejected" and "TypeError" in report.graded[0].reason


def test_sample_grading_writes_only_into_its_own_folder(tmp_path, fake_host, stub_verdicts):
    from course_grader.samples.expectations import grade_samples

    line, ok = grade_samples(tmp_path / "samples-grading", jobs=2, progress=False,
                             host_factory=lambda *a: fake_host(), verdict_for=stub_verdicts)
    assert "sample submissions graded:" in line and not ok     # stub verdicts cannot meet the expectations
    out = tmp_path / "samples-grading"
    assert (out / "submissions" / "expected.json").is_file() and (out / "grades.csv").is_file()
    assert (out / "feedback" / "index.html").is_file() and not list(tmp_path.glob("*.csv"))


def test_without_root_or_user_namespaces_grading_refuses_unless_unconfined(tmp_path, submission, monkeypatch):
    from course_grader.sandbox import confine, policy

    submission("ann", "ex02")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(policy, "_USERNS_REFUSAL", [confine.USERNS_SETTINGS])   # as on a host with them off
    with pytest.raises(GraderError, match="cannot confine.*unprivileged_userns_clone.*"
                                          "apparmor_restrict_unprivileged_userns.*--unconfined"):
        grade_class(tmp_path / "subs", tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "gradebook.sqlite").exists()
    assert policy.confinement_refusal("this process", unconfined=True) is None


def test_without_root_user_namespaces_confine_the_runs(monkeypatch):
    from course_grader.sandbox import policy

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(policy, "_USERNS_REFUSAL", [None])
    assert policy.confinement_mode() == "userns" and policy.confinement_refusal("this process", False) is None


def test_the_sandbox_notices_reach_the_report(tmp_path, submission, grade_fake, fake_host):
    class Host(fake_host):
        notices = ["no writable memory cgroup: the address-space rlimit is used instead"]

    submission("ann", "ex02")
    report = grade_fake(tmp_path / "subs", tmp_path / "out", host_factory=lambda *a: Host())
    assert report.sandbox_notices == Host.notices


def test_grading_one_exercise_keeps_the_class_files_whole(tmp_path, submission, grade_fake):
    import csv

    for student in ("ann", "ben"):
        submission(student, "ex01")
        submission(student, "ex06")
    out = tmp_path / "out"

    def rows(name):
        with open(out / name, newline="", encoding="utf-8") as fh:
            return sorted(tuple(sorted(r.items())) for r in csv.DictReader(fh))

    grade_fake(tmp_path / "subs", out)
    whole = {name: rows(name) for name in ("grades.csv", "review.csv")}
    assert len(whole["grades.csv"]) >= 2 and whole["review.csv"]
    index = (out / "feedback" / "index.html").read_text(encoding="utf-8")
    assert "ann" in index and "ben" in index
    grade_fake(tmp_path / "subs", out, exercise="ex01")          # a run limited to one exercise
    assert {name: rows(name) for name in whole} == whole
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(tmp_path / "subs" / "ann__ex01_capture_boundary.ipynb", one)
    grade_fake(one, out)                                          # a run over one student's file
    assert {name: rows(name) for name in whole} == whole
    index = (out / "feedback" / "index.html").read_text(encoding="utf-8")
    assert "ann" in index and "ben" in index
