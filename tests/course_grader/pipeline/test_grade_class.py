"""grade_class: a folder of submissions graded into one results folder; a batch always finishes, bad files are
rejections, duplicates are chosen the same way whatever the jobs, a partial run keeps the class files whole."""

from __future__ import annotations

import os
import shutil

import pytest

from course_grader.config import GradeOptions
from course_grader.errors import GraderError
from course_grader.pipeline.grade_class import grade_class
from course_grader.results.gradebook import Gradebook


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


def test_a_class_goes_to_its_own_folder_never_the_samples(tmp_path):
    out = GradeOptions.results_for(tmp_path / "fall-2026")
    assert out.name == "fall-2026" and out.parent.name == "grading" and "samples" not in str(out)


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
