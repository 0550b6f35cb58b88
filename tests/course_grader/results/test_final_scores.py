"""Which scores leave the grader for an LMS (results/final_scores.py), and the record of posts (results/posted.py)."""

from __future__ import annotations

from course_grader.results.attempt import AnswerItem, Attempt, TestResult
from course_grader.results.final_scores import PENDING, final_scores
from course_grader.results.gradebook import Gradebook
from course_grader.results.posted import Post, latest, record
from course_grader.status import AttemptStatus, TestStatus


def attempt(book: Gradebook, student: str, exercise: str, status=AttemptStatus.GRADED, passed: int = 2,
            written: bool = False, reason: str = "") -> str:
    tests = [TestResult(f"t{i}", False, 1.0, TestStatus.PASSED if i < passed else TestStatus.FAILED)
             for i in range(3)]
    answers = [AnswerItem("a1", "why?", "because", "rubric", 2.0)] if written else []
    a = Attempt(key=f"{student}-{exercise}-{status}", student=student, exercise=exercise,
                exercise_name=f"{exercise}_slug", title=f"Title {exercise}", path=f"{student}/{exercise}.ipynb",
                submission_sha="s", source_sha="s", status=status, reason=reason, auto_possible=3.0,
                manual_possible=2.0 if written else 0.0, tests=tests, answers=answers)
    book.record(a, "test")
    book.set_current(student, exercise, a.key, [])
    return a.key


def test_only_graded_and_fully_reviewed_scores_are_final(tmp_path):
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        attempt(book, "ada", "ex01")
        attempt(book, "bob", "ex01", AttemptStatus.FLAGGED)
        attempt(book, "cy", "ex01", written=True)
        key = attempt(book, "dee", "ex01", written=True)
        book.set_review(key, "a1", 1.5, "ok")
        attempt(book, "eve", "ex01", AttemptStatus.REJECTED, reason="not a notebook")
        attempt(book, "fay", "ex01", AttemptStatus.FAULT)
        got = {s.student: s for s in final_scores(book)}
    assert (got["ada"].final, got["ada"].given, got["ada"].maximum) == (True, 2.0, 3.0)
    assert (got["dee"].final, got["dee"].given, got["dee"].maximum) == (True, 3.5, 5.0)
    assert "clear the flag" in got["bob"].withheld
    assert got["cy"].withheld == PENDING
    assert "not a notebook" in got["eve"].withheld
    assert "grader fault" in got["fay"].withheld


def test_a_post_is_recorded_at_once_and_the_latest_one_counts(tmp_path):
    path = tmp_path / "gradebook.sqlite"
    with Gradebook(path) as book:
        record(book, Post("ada", "ex01", "k1", "sub-ada", "http://lms/li/1", 1.0, 3.0, "posted"))
        record(book, Post("ada", "ex01", "k2", "sub-ada", "http://lms/li/1", 2.0, 3.0, "posted"))
    with Gradebook(path) as again:              # another process: it was committed
        mine = latest(again)[("ada", "ex01")]
    assert (mine.attempt, mine.given, mine.how) == ("k2", 2.0, "posted") and mine.posted_at > 0
