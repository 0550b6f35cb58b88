import csv
import importlib.util
from pathlib import Path

from compile_course.grading.export import export_grades, export_review, import_review
from compile_course.grading.feedback import page_path, render_all
from compile_course.grading.gradebook import Gradebook, attempt_key
from compile_course.grading.verdict import AnswerItem, Outcome, TestResult

HIDDEN_CODE = "assert secret_check(double(x)), 'sign of zero'"


def book_with_attempt(tmp_path, status="graded"):
    book = Gradebook(tmp_path / "g.sqlite")
    key = attempt_key("alice", "ex90", "s", "src", "1")
    book.record(Outcome("alice", "ex90", "ex90_fixture", "/x", key, "s", "src", status, "", 2.0, 5.0, 2.0,
                        [TestResult("t1", "test", 2, 2, "passed", "", "double agrees"),
                         TestResult("h1", "hidden-test", 3, 0, "failed", "AssertionError: sign of zero")],
                        [AnswerItem("q1", "Why is x + x exact?", "Doubling <b>is</b> exact.", "2: exactness", 2.0)]), "1")
    return book


def test_review_sheet_round_trip_and_feedback(tmp_path):
    book = book_with_attempt(tmp_path)
    sheet = export_review(book, tmp_path / "review.csv")
    rows = list(csv.DictReader(open(sheet)))
    assert [r["cell_id"] for r in rows] == ["q1"] and rows[0]["rubric"] == "2: exactness" and rows[0]["score"] == ""
    rows[0]["score"], rows[0]["comment"] = "1.5", "Right idea; say why."
    with open(sheet, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    applied, problems = import_review(book, sheet)
    assert (applied, problems) == (1, [])
    render_all(book, tmp_path / "out")
    page = page_path(tmp_path / "out", "alice", "ex90_fixture").read_text()
    assert "Right idea; say why." in page and "3.5 / 7" in page
    assert "h1 (hidden)" in page and HIDDEN_CODE not in page and "&lt;b&gt;" not in page  # answers are not echoed raw
    grades = list(csv.DictReader(open(export_grades(book, tmp_path / "grades.csv"))))
    assert grades[0]["total"] == "3.5" and grades[0]["review_pending"] == "no"


def test_bad_review_rows_are_reported_not_applied(tmp_path):
    book = book_with_attempt(tmp_path)
    sheet = tmp_path / "r.csv"
    sheet.write_text("student,exercise,cell_id,score,comment,attempt\n"
                     "alice,ex90_fixture,q1,9,too many,\n"
                     "alice,ex90_fixture,q1,abc,,\n"
                     "alice,ex90_fixture,nope,1,,\n"
                     "carol,ex90_fixture,q1,1,,\n"
                     "alice,ex90_fixture,q1,1,,deadbeef\n")
    applied, problems = import_review(book, sheet)
    assert applied == 0 and len(problems) == 5
    assert book.manual_score(book.current()[0]["key"]) == (0.0, False)


def test_flagged_attempts_get_no_manual_points(tmp_path):
    book = book_with_attempt(tmp_path, status="flagged")
    sheet = tmp_path / "r.csv"
    sheet.write_text("student,exercise,cell_id,score,comment\nalice,ex90_fixture,q1,2,good\n")
    applied, problems = import_review(book, sheet)
    assert applied == 1 and "flagged" in problems[0]
    assert book.manual_score(book.current()[0]["key"]) == (0.0, True)
