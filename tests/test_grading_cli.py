"""End to end on the fixture exercise through `course grade`: exit codes, resume after kill -9, idempotence, review round trip."""

import csv
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compile_course.grading.cli import main
from compile_course.grading.gradebook import Gradebook

spec = importlib.util.spec_from_file_location("helpers", Path(__file__).parent / "fixtures" / "grading" / "helpers.py")
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    d = tmp_path_factory.mktemp("subs")
    h.write(h.student(True), d / "alice" / "ex90_fixture.ipynb")
    h.write(h.partial(), d / "bob" / "ex90_fixture.ipynb")
    h.write(h.student(False), d / "carol__ex90_fixture.ipynb")
    h.write("{not json", d / "dave__ex90_fixture.ipynb")
    tampered = h.student(True)
    tampered["cells"].insert(h.cell_index(tampered, "ex90-why"), {"cell_type": "code", "metadata": {}, "outputs": [],
                             "source": "import torch\nt = [torch]\nt[0].equal = lambda a, b: True"})
    h.write(tampered, d / "erin" / "ex90_fixture.ipynb")
    return d


def args(subs, tmp, *extra):
    return [str(subs), "--solutions", str(h.SOLUTIONS), "--gradebook", str(tmp / "gb.sqlite"), "--out", str(tmp / "out"),
            "--jobs", "2", "--no-progress", "--cell-timeout", "60", *extra]


@pytest.fixture(scope="module")
def clean(subs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clean")
    assert main(args(subs, tmp)) == 0  # students failing is not a grader fault
    return tmp


def test_scores_reasons_and_outputs(clean):
    book = Gradebook(clean / "gb.sqlite")
    rows = {r["student"]: r for r in book.current()}
    got = {s: (r["status"], r["auto_score"]) for s, r in rows.items()}
    assert got == {"alice": ("graded", 6.0), "bob": ("graded", 5.0), "carol": ("graded", 0.0),
                   "dave": ("rejected", 0.0), "erin": ("flagged", 0.0)}
    assert "invalid JSON" in rows["dave"]["reason"] and "torch.equal" in rows["erin"]["reason"]
    grades = list(csv.DictReader(open(clean / "out" / "grades.csv")))
    assert len(grades) == 5
    page = (clean / "out" / "feedback" / "alice" / "ex90_fixture.html").read_text()
    assert "ex90-hidden-double (hidden)" in page and "signbit" not in page


def test_regrade_is_idempotent(subs, clean):
    before = Gradebook(clean / "gb.sqlite").snapshot()
    t0 = time.monotonic()
    assert main(args(subs, clean)) == 0
    assert time.monotonic() - t0 < 5  # nothing re-ran
    assert Gradebook(clean / "gb.sqlite").snapshot() == before


def test_kill_9_midway_then_rerun_equals_a_clean_run(subs, clean, tmp_path):
    cmd = [sys.executable, "-m", "compile_course.cli", "grade", *args(subs, tmp_path)]
    cmd[cmd.index("--jobs") + 1] = "1"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    db = tmp_path / "gb.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if sqlite3.connect(db).execute("SELECT COUNT(*) FROM attempts WHERE status != 'rejected'").fetchone()[0] >= 1:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial_rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    assert 1 <= partial_rows < 5, "the kill did not land midway"
    assert main(args(subs, tmp_path)) == 0
    assert Gradebook(db).snapshot() == Gradebook(clean / "gb.sqlite").snapshot()


def test_review_sheet_round_trip_through_the_cli(subs, clean):
    sheet = clean / "out" / "review.csv"
    rows = list(csv.DictReader(open(sheet)))
    assert {r["student"] for r in rows} == {"alice", "bob", "carol", "erin"} and rows[0]["question"].startswith("Why is")
    for r in rows:
        r["score"], r["comment"] = ("2", "exact, well argued") if r["student"] == "alice" else ("0", "no answer")
    with open(sheet, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main(["--import-review", str(sheet), "--solutions", str(h.SOLUTIONS), "--gradebook", str(clean / "gb.sqlite"), "--out", str(clean / "out")]) == 0
    page = (clean / "out" / "feedback" / "alice" / "ex90_fixture.html").read_text()
    assert "exact, well argued" in page and "8 / 8" in page


def test_grader_fault_exit_code(tmp_path):
    assert main([str(tmp_path), "--solutions", str(tmp_path / "none"), "--gradebook", str(tmp_path / "g.sqlite")]) == 1
