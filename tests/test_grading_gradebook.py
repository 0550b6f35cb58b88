import sqlite3

from compile_course.grading.gradebook import Gradebook, attempt_key
from compile_course.grading.verdict import AnswerItem, Outcome, TestResult


def outcome(student="alice", sha="s1", score=2.0):
    key = attempt_key(student, "ex90", sha, "src", "1")
    return Outcome(student, "ex90", "ex90_fixture", f"/subs/{student}.ipynb", key, sha, "src", "graded", "", score, 5.0, 2.0,
                   [TestResult("t1", "test", 2, score, "passed" if score else "failed", "")],
                   [AnswerItem("q1", "Why?", "Because.", "rubric", 2.0)])


def test_record_is_idempotent_and_keyed(tmp_path):
    book = Gradebook(tmp_path / "g.sqlite")
    assert book.record(outcome(), "1") is True
    assert book.record(outcome(), "1") is False
    assert book.db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 1
    assert book.db.execute("SELECT COUNT(*) FROM tests").fetchone()[0] == 1
    assert book.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newest_attempt_counts_and_history_is_kept(tmp_path):
    book = Gradebook(tmp_path / "g.sqlite")
    book.record(outcome(sha="old", score=0.0), "1")
    book.record(outcome(sha="new", score=2.0), "1")
    book.record(outcome(student="bob"), "1")
    current = book.current()
    assert [(r["student"], r["submission_sha"]) for r in current] == [("alice", "new"), ("bob", "s1")]
    assert book.db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 3


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    book = Gradebook(tmp_path / "g.sqlite")
    bad = outcome()
    bad.tests.append(bad.tests[0])  # duplicate (key, cell_id): the insert fails midway
    try:
        book.record(bad, "1")
    except sqlite3.IntegrityError:
        pass
    assert book.db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 0


def test_review_scores_and_snapshot(tmp_path):
    book = Gradebook(tmp_path / "g.sqlite")
    o = outcome()
    book.record(o, "1")
    assert book.manual_score(o.key) == (0.0, False)
    assert book.set_review(o.key, "q1", 1.5, "ok")
    assert book.manual_score(o.key) == (1.5, True)
    snap = book.snapshot()
    assert len(snap["attempts"]) == 1 and snap["answers"][0][-2:] == (1.5, "ok")
