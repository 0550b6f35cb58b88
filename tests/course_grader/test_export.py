"""CSV exports: formula-like cells neutralised, and the review sheet's round trip."""

from __future__ import annotations

import csv

import pytest

from course_grader.export import export_grades, export_review, import_review, neutralise, unneutralise
from course_grader.gradebook import Gradebook


@pytest.mark.parametrize("text", ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", "=HYPERLINK(\"http://x\")"])
def test_formula_like_cells_are_neutralised_and_restored(text):
    assert neutralise(text) == "'" + text and unneutralise(neutralise(text)) == text


@pytest.mark.parametrize("text", ["plain", "3.5", "", "'quoted", "a=b"])
def test_other_cells_are_left_alone(text):
    assert neutralise(text) == text and unneutralise(text) == text


def test_no_exported_cell_starts_like_a_formula(tmp_path, submission, grade_fake, exercises):
    def hostile(nb):
        for cell in nb.cells:
            if cell.metadata.get("course", {}).get("kind") == "answer":
                cell.source = '=HYPERLINK("http://evil.example","click")'

    submission("oli", "ex06", edit=hostile)
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    for name in ("grades.csv", "review.csv"):
        with open(report.out_dir / name, newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row), row
    with open(report.out_dir / "review.csv", newline="", encoding="utf-8") as fh:
        answers = [r["answer"] for r in csv.DictReader(fh)]
    assert answers and all(a == "'=HYPERLINK(\"http://evil.example\",\"click\")" for a in answers)


def test_review_round_trip_scores_comments_and_refuses_bad_rows(tmp_path, submission, grade_fake, exercises):
    submission("pia", "ex06")
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    sheet = report.out_dir / "review.csv"
    with open(sheet, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(exercises["ex06"].answers) and all(r["score"] == "" for r in rows)
    rows[0]["score"], rows[0]["comment"] = "1.5", "-good start"          # a comment that looks like a formula
    rows[1]["score"] = "99"                                               # out of range: refused
    rows[2]["score"] = "abc"                                              # not a number: refused
    with open(sheet, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([{k: neutralise(v) for k, v in r.items()} for r in rows])
    with Gradebook(report.gradebook) as book:
        applied, problems = import_review(book, sheet)
        assert applied == len(rows) - 2 and len(problems) == 2
        [row] = book.current()
        answers = {a["cell_id"]: a for a in book.answers(row["key"])}
        assert answers[rows[0]["cell_id"]]["score"] == 1.5 and answers[rows[0]["cell_id"]]["comment"] == "-good start"
        export_grades(book, tmp_path / "g.csv")
        export_review(book, tmp_path / "r.csv")
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as fh:
        [grade] = list(csv.DictReader(fh))
    assert grade["manual_score"] == "1.5" and grade["review_pending"] == "yes"


def test_a_resubmission_is_not_scored_with_an_old_sheet(tmp_path, submission, grade_fake):
    submission("quinn", "ex06")
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    old_sheet = tmp_path / "old.csv"
    old_sheet.write_bytes((report.out_dir / "review.csv").read_bytes())

    def changed(nb):
        nb.cells[-1].source += "\n\nMore thoughts."

    submission("quinn", "ex06", edit=changed)
    grade_fake(tmp_path / "subs", tmp_path / "out")
    with Gradebook(report.gradebook) as book:
        applied, problems = import_review(book, old_sheet)
    assert applied == 0 and problems and all("resubmitted" in p for p in problems)
