"""The gradebook: idempotent attempts, kill -9 resume, flags cleared with a reason and re-scored."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from course_grader.results.attempt import Attempt, TestResult
from course_grader.results.gradebook import Gradebook
from course_grader.status import AttemptStatus, TestStatus
from course_grader.ui.grade import main as grade_main

TESTS = Path(__file__).resolve().parents[3] / "tests"  # where grading_fixtures is


def test_grading_twice_changes_nothing(tmp_path, submission, grade_fake):
    submission("rae", "ex01")
    submission("sam", "ex02", answered=False)
    first = grade_fake(tmp_path / "subs", tmp_path / "out")
    with Gradebook(first.gradebook) as book:
        before = book.snapshot()
    second = grade_fake(tmp_path / "subs", tmp_path / "out")
    assert len(first.graded) == 2 and second.graded == [] and second.skipped == 2
    with Gradebook(second.gradebook) as book:
        assert book.snapshot() == before


def test_a_hidden_message_is_never_stored(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as book:
        a = Attempt("k", "tia", "ex01", "ex01_x", "t", "p", "s", "s", AttemptStatus.GRADED,
                    tests=[TestResult("ex01-hidden", True, 3, TestStatus.FAILED, "leak")])
        with pytest.raises(ValueError, match="hidden"):
            book.record(a, "2")
        assert book.attempt("k") is None


def test_lone_surrogates_in_notes_flags_and_notices_still_make_a_page(tmp_path):
    """The JSON columns too: ``json.dumps`` writes a lone surrogate as an escape that ``json.loads`` turns back
    into the surrogate, and the page then could not be written (the hostile corpus's adv-surrogate-error: a
    feedback-run error text in the notes stopped ``course grade`` with a traceback)."""
    from course_grader.results.feedback import render_all

    with Gradebook(tmp_path / "g.sqlite") as book:
        a = Attempt("k", "tia", "ex01", "ex01_capture_boundary", "t", "p", "s", "s", AttemptStatus.GRADED,
                    flags=["flag \udcff"], notices=["notice \ud800"], notes=["your cell raised \udfff\ud800"])
        book.record(a, "2")
        book.set_current("tia", "ex01", "k", ["other \udc80.ipynb"])
        pages = render_all(book, tmp_path)
        text = "".join(p.read_text(encoding="utf-8") for p in pages)
    assert "your cell raised \\udfff\\ud800" in text and "flag \\udcff" in text


def _flagged(tmp_path, submission, grade_fake):
    def patch(nb):
        nb.cells.append(nbformat.v4.new_code_cell("import torch\ntorch.equal = lambda a, b: True"))

    submission("uma", "ex01", edit=patch)
    return grade_fake(tmp_path / "subs", tmp_path / "out")


def test_clearing_a_flag_records_the_reason_and_rescores(tmp_path, submission, grade_fake, capsys):
    report = _flagged(tmp_path, submission, grade_fake)
    with Gradebook(report.gradebook) as book:
        [row] = book.current()
    assert row["status"] == "flagged" and row["auto_score"] == 0
    out = ["--out", str(report.out_dir)]
    with pytest.raises(SystemExit) as no_reason:                                  # a reason is required
        grade_main(["clear-flag", row["key"][:12], *out])
    assert no_reason.value.code == 2
    assert grade_main(["clear-flag", row["key"][:12], "--reason", "  ", *out]) == 2    # and not a blank one
    assert grade_main(["clear-flag", "ffff" * 4, "--reason", "x", *out]) == 2       # no such attempt
    assert grade_main(["clear-flag", row["key"][:12], "--reason", "patched torch in a scratch cell only", *out]) == 0
    with Gradebook(report.gradebook) as book:
        [row] = book.current()
        assert row["status"] == "graded" and row["auto_score"] == row["auto_possible"] == 8
        assert book.clearance(row["key"])["reason"] == "patched torch in a scratch cell only"
        assert {t["status"] for t in book.tests(row["key"])} == {"passed"}
    assert grade_main(["clear-flag", row["key"][:12], "--reason", "again", *out]) == 2   # not flagged any more
    page = (report.out_dir / "feedback" / "uma" / "ex01_capture_boundary.html").read_text()
    assert "patched torch in a scratch cell only" in page
    grades = (report.out_dir / "grades.csv").read_text()
    assert "uma,ex01_capture_boundary,graded,8,8" in grades
    # grading again keeps the cleared verdict (same attempt key: nothing is re-graded)
    again = grade_fake(tmp_path / "subs", tmp_path / "out")
    assert again.skipped == 1
    with Gradebook(report.gradebook) as book:
        assert book.current()[0]["status"] == "graded"


RUNNER = """
import sys, time
sys.path.insert(0, {here!r})
from grading_fixtures import FakeHost, stub_verdicts
from course_grader.pipeline.grade_class import grade_class

class SlowHost(FakeHost):
    def measure(self, *a):
        raise AssertionError("not used")

def slow(ex):
    grade, harness = stub_verdicts(ex)
    def timed(ctx):
        time.sleep({delay})
        return grade(ctx)
    return timed, harness

grade_class({subs!r}, {out!r}, jobs=1, progress=False, host_factory=lambda h, c, l: SlowHost(), verdict_for=slow)
print("finished")
"""


def _runner(subs, out, delay):
    code = RUNNER.format(here=str(TESTS), subs=str(subs), out=str(out), delay=delay)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_kill_9_mid_run_then_resume_equals_a_clean_run(tmp_path, submission):
    for n in range(8):
        submission(f"st{n}", "ex01", answered=n % 2 == 0)
    subs = tmp_path / "subs"
    proc = _runner(subs, tmp_path / "killed", 0.5)
    db = tmp_path / "killed" / "gradebook.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if db.exists():
            try:
                with sqlite3.connect(db) as c:
                    if c.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] >= 2:
                        break
            except sqlite3.Error:
                pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        done = c.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
        # every attempt is whole: no attempt without its tests
        assert c.execute("SELECT COUNT(*) FROM attempts a WHERE NOT EXISTS "
                         "(SELECT 1 FROM tests t WHERE t.key = a.key)").fetchone()[0] == 0
    assert 2 <= done < 8
    resumed = _runner(subs, tmp_path / "killed", 0.0)
    assert "finished" in resumed.communicate(timeout=300)[0]
    clean = _runner(subs, tmp_path / "clean", 0.0)
    assert "finished" in clean.communicate(timeout=300)[0]
    with Gradebook(db) as a, Gradebook(tmp_path / "clean" / "gradebook.sqlite") as b:
        assert a.snapshot() == b.snapshot() and len(a.current()) == 8


def test_lone_surrogates_in_a_submission_never_stop_the_class(tmp_path, submission, grade_fake):
    """A written answer holding a JSON ``\\udc80`` escape, and a file name with an undecodable byte (Python
    reads 0xff as ``\\udcff``): both are graded and stored, and the rest of the class with them."""
    import os

    from course_grader.results.gradebook import Gradebook

    def surrogate_answer(nb):
        cell = next(c for c in nb.cells if c.metadata.get("course", {}).get("kind") == "answer")
        cell.source = "my answer SURROGATE ends here"

    answered = submission("ann", "ex06", edit=surrogate_answer)
    # valid UTF-8 JSON whose string holds a lone surrogate, as a student's editor could write it
    answered.write_text(answered.read_text().replace("SURROGATE", "\\udc80"), encoding="utf-8")
    good = submission("bob", "ex02")
    odd = os.fsencode(str(tmp_path / "subs")) + b"/carl__ex02_diagnose\xff.ipynb"
    with open(odd, "wb") as f:
        f.write(good.read_bytes())
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    assert report.ok and len(report.graded) == 3
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as book:
        rows = {r["student"]: r for r in book.current()}
        assert set(rows) == {"ann", "bob", "carl"}
        answers = book.db.execute("SELECT answer FROM answers WHERE key=?", (rows["ann"]["key"],)).fetchall()
        assert any("my answer \\udc80 ends here" in a["answer"] for a in answers)
        assert "\\udcff" in rows["carl"]["path"]
    assert "ann" in (tmp_path / "out" / "grades.csv").read_text(encoding="utf-8")
    assert (tmp_path / "out" / "feedback" / "index.html").read_text(encoding="utf-8")


def _older_gradebook(path, version: int):
    """A gradebook as an older grader left it: version 1's tables (no review_kept), one attempt, ``version``."""
    import sqlite3

    from course_grader.results.gradebook import TABLES

    db = sqlite3.connect(path)
    for name, sql in TABLES.items():
        if name != "review_kept":
            db.execute(sql)
    db.execute("INSERT INTO attempts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
               ("k1", "ada", "ex01", "ex01_capture_boundary", "t", "ada/ex01.ipynb", "s", "s", "2", "graded", "",
                3.0, 5.0, 0.0, "[]", "[]", "[]", 0.0, 1.0))
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


def test_an_older_gradebook_is_migrated_when_it_is_opened(tmp_path):
    import sqlite3

    from course_grader.results.gradebook import SCHEMA_VERSION, Gradebook

    path = tmp_path / "gradebook.sqlite"
    _older_gradebook(path, 0)
    with Gradebook(path) as book:
        assert book.schema_version == 0 and book.has("k1")
        assert book.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        book.db.execute("SELECT * FROM review_kept").fetchall()        # the table a newer grader added
    with Gradebook(path) as again:
        assert again.schema_version == SCHEMA_VERSION and again.has("k1")
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables >= {"review_kept", "attempts"}
    db.close()


def test_a_new_gradebook_records_its_schema_version(tmp_path):
    from course_grader.results.gradebook import SCHEMA_VERSION, TABLES, Gradebook

    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        assert book.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in book.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == set(TABLES)


def test_a_gradebook_of_a_newer_grader_is_refused_and_left_as_it_was(tmp_path):
    from course_grader.errors import GradebookVersionError
    from course_grader.results.gradebook import SCHEMA_VERSION, Gradebook

    path = tmp_path / "gradebook.sqlite"
    _older_gradebook(path, SCHEMA_VERSION + 1)
    before = path.read_bytes()
    with pytest.raises(GradebookVersionError, match=f"schema {SCHEMA_VERSION + 1}"):
        Gradebook(path)
    assert path.read_bytes() == before
