"""CSV exports: formula-like cells neutralised, and the review sheet's round trip."""

from __future__ import annotations

import csv

import pytest

from course_grader.results.export import export_grades, export_review, import_review, neutralise, unneutralise
from course_grader.results.gradebook import Gradebook


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
        result = import_review(book, sheet)
        assert (result.scored, result.blank, len(result.kept)) == (1, len(rows) - 3, 2)
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
        result = import_review(book, old_sheet)
    assert result.scored == 0 and result.kept and all("resubmitted" in p for p in result.kept)


def _sheet(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _write_sheet(path, rows, **kw):
    with open(path, "w", newline="", encoding=kw.pop("encoding", "utf-8")) as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), **kw)
        w.writeheader()
        w.writerows(rows)


def _graded_ex06(tmp_path, submission, grade_fake, students=("rae",)):
    for s in students:
        submission(s, "ex06")
    return grade_fake(tmp_path / "subs", tmp_path / "out")


def test_rejected_rows_keep_what_was_typed_with_the_reason_and_only_scores_are_counted(
        tmp_path, submission, grade_fake, exercises, capsys):
    from course_grader.ui.grade import main as grade_main

    report = _graded_ex06(tmp_path, submission, grade_fake, ("rae", "sol"))
    sheet = report.out_dir / "review.csv"
    rows = _sheet(sheet)
    n = len(exercises["ex06"].answers)
    assert len(rows) == 2 * n and all(r["problem"] == "" for r in rows)
    rae = [r for r in rows if r["student"] == "rae"]
    for r in rae:
        r["score"], r["comment"] = "1", f"fine {r['cell_id']}"
    rae[0]["score"], rae[0]["comment"] = "99", "careful work, but see the rubric"      # out of range
    rae[1]["score"], rae[1]["comment"] = "one", "typed a word"                          # not a number
    _write_sheet(sheet, rows)
    out = str(report.out_dir)
    assert grade_main(["import-review", str(sheet), "--out", out]) == 0
    printed = capsys.readouterr().out
    assert f"review: {n - 2} answers scored, 0 comments without a score, {n} rows left blank, 2 rows not applied" \
        in printed
    again = {(r["student"], r["cell_id"]): r for r in _sheet(sheet)}            # review.csv was rewritten
    bad0, bad1 = again[("rae", rae[0]["cell_id"])], again[("rae", rae[1]["cell_id"])]
    assert (bad0["score"], bad0["comment"]) == ("99", "careful work, but see the rubric")
    assert "outside 0.." in bad0["problem"]
    assert (bad1["score"], bad1["comment"]) == ("one", "typed a word") and "not a number" in bad1["problem"]
    assert again[("rae", rae[2]["cell_id"])]["score"] == "1" and again[("rae", rae[2]["cell_id"])]["problem"] == ""
    # a grading run rewrites review.csv too, and keeps them
    grade_fake(tmp_path / "subs", tmp_path / "out")
    assert {(r["cell_id"], r["score"]) for r in _sheet(sheet) if r["problem"]} == {(rae[0]["cell_id"], "99"),
                                                                                     (rae[1]["cell_id"], "one")}
    # fixed in the sheet and imported again: applied, the problem gone; re-importing blanks changes nothing
    rows = _sheet(sheet)
    for r in rows:
        if r["problem"]:
            r["score"] = "0.5"
    _write_sheet(sheet, rows)
    assert grade_main(["import-review", str(sheet), "--out", out]) == 0
    assert f"review: {n} answers scored, 0 comments without a score, {n} rows left blank, 0 rows not applied" \
        in capsys.readouterr().out
    final = _sheet(sheet)
    assert not any(r["problem"] for r in final)
    assert {r["score"] for r in final if r["student"] == "rae"} == {"0.5", "1"}


def _cli_import(sheet, out, capsys):
    from course_grader.ui.grade import main as grade_main

    code = grade_main(["import-review", str(sheet), "--out", str(out)])
    return code, capsys.readouterr()


def test_a_hand_typed_sheet_with_a_bom_crlf_spaces_and_semicolons_is_read(tmp_path, submission, grade_fake, capsys):
    report = _graded_ex06(tmp_path, submission, grade_fake)
    rows = _sheet(report.out_dir / "review.csv")
    keep = ["student", "exercise", "cell_id", "score", "comment", "attempt"]
    lines = [";".join(f"  {k.upper() if k == 'score' else k} " for k in keep)]
    for r in rows:
        lines.append(";".join([f" {r['student']} ", r["exercise"], r["cell_id"], " 1 ", " good ", r["attempt"]]))
    sheet = tmp_path / "typed.csv"
    sheet.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    code, printed = _cli_import(sheet, report.out_dir, capsys)
    assert code == 0, printed.err
    assert f"review: {len(rows)} answers scored" in printed.out
    assert {(r["score"], r["comment"]) for r in _sheet(report.out_dir / "review.csv")} == {("1", "good")}


@pytest.mark.parametrize("damage, message", [
    (lambda text: text.replace("score,", "points,", 1), "no column 'score'"),          # a renamed header
    (lambda text: text.replace(",comment,", ",", 1), "no column 'comment'"),          # a missing column
])
def test_a_sheet_with_a_bad_header_is_refused_and_nothing_is_lost(tmp_path, submission, grade_fake, capsys,
                                                                  damage, message):
    report = _graded_ex06(tmp_path, submission, grade_fake)
    sheet = report.out_dir / "review.csv"
    rows = _sheet(sheet)
    rows[0]["score"], rows[0]["comment"] = "1", "typed by hand"
    _write_sheet(sheet, rows)
    sheet.write_text(damage(sheet.read_text(encoding="utf-8")), encoding="utf-8")
    before = {p: p.read_bytes() for p in report.out_dir.rglob("*") if p.is_file()}
    code, printed = _cli_import(sheet, report.out_dir, capsys)
    assert code == 2 and message in printed.err and "nothing was imported" in printed.err
    assert {p: p.read_bytes() for p in report.out_dir.rglob("*") if p.is_file()} == before


def test_a_sheet_saved_in_another_encoding_is_refused_and_nothing_is_lost(tmp_path, submission, grade_fake, capsys):
    report = _graded_ex06(tmp_path, submission, grade_fake)
    sheet = report.out_dir / "review.csv"
    rows = _sheet(sheet)
    rows[0]["score"], rows[0]["comment"] = "1", "très bien"
    _write_sheet(sheet, rows, encoding="cp1252")
    before = sheet.read_bytes()
    code, printed = _cli_import(sheet, report.out_dir, capsys)
    assert code == 2 and "is not UTF-8" in printed.err and sheet.read_bytes() == before


def _physical_line_of(path, needle):
    """The 1-based line of ``path`` that holds ``needle``: what an editor shows."""
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in line)


def test_import_errors_name_the_sheets_own_lines_and_are_written_into_the_imported_sheet(
        tmp_path, submission, grade_fake, capsys):
    def long_answers(nb):   # answers over many lines: a CSV record spans as many lines of the file
        for cell in nb.cells:
            if cell.metadata.get("course", {}).get("kind") == "answer":
                cell.source = "\n".join(f"thought {i}" for i in range(12))

    for s in ("rae", "sol"):
        submission(s, "ex06", edit=long_answers)
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    rows = _sheet(report.out_dir / "review.csv")
    bad = rows[-1]
    bad["score"], bad["comment"] = "lots", "marker-of-the-bad-row"
    for r in rows[:-1]:
        r["score"] = "0"
    sheet = tmp_path / "mine" / "review-filled.csv"     # the instructor's own copy, not OUT/review.csv
    sheet.parent.mkdir()
    _write_sheet(sheet, [{k: v for k, v in r.items() if k != "problem"} for r in rows])   # a sheet without it
    line = _physical_line_of(sheet, bad["student"] + "," + bad["exercise"] + "," + bad["cell_id"])
    assert line > len(rows) + 1          # far below its row number: the answers above span many lines
    code, printed = _cli_import(sheet, report.out_dir, capsys)
    assert code == 0, printed.err
    assert f"not applied: review-filled.csv line {line}: score 'lots' is not a number" in printed.out
    assert f"the 'problem' column of {sheet} and of {report.out_dir / 'review.csv'}" in printed.out
    back = _sheet(sheet)                 # the imported file now says why, and keeps everything typed
    assert [{k: v for k, v in r.items() if k != "problem"} for r in back] == \
        [{k: v for k, v in r.items() if k != "problem"} for r in rows]
    assert [bool(r["problem"]) for r in back] == [False] * (len(rows) - 1) + [True]
    assert "not a number" in back[-1]["problem"]
    # fixed in that file and imported again: applied, and its problem column is empty again
    back[-1]["score"] = "1"
    _write_sheet(sheet, back)
    code, printed = _cli_import(sheet, report.out_dir, capsys)
    assert code == 0 and "0 rows not applied" in printed.out
    assert not any(r["problem"] for r in _sheet(sheet))


def test_a_sheet_that_cannot_be_written_back_keeps_the_reasons_in_review_csv(tmp_path, submission, grade_fake,
                                                                             capsys, monkeypatch):
    import course_grader.results.export as export

    report = _graded_ex06(tmp_path, submission, grade_fake)
    rows = _sheet(report.out_dir / "review.csv")
    rows[0]["score"] = "nope"
    sheet = tmp_path / "sheet.csv"
    _write_sheet(sheet, rows)
    before = sheet.read_bytes()

    def refused(*args, **kwargs):   # a folder the instructor may read but not write (as root, none is)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(export.tempfile, "mkstemp", refused)
    code, printed = _cli_import(sheet, report.out_dir, capsys)
    assert code == 0 and f"could not write the reasons into {sheet} (Permission denied)" in printed.out
    assert sheet.read_bytes() == before
    assert f"the 'problem' column of {report.out_dir / 'review.csv'}: fix them" in printed.out
    assert "not a number" in {r["cell_id"]: r for r in _sheet(report.out_dir / "review.csv")}[rows[0]["cell_id"]][
        "problem"]
