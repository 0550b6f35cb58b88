"""CSV exports from the gradebook, and the manual review sheet (out and back in).

``grades.csv``: one row per student and exercise (the attempt that counts).
``review.csv``: one row per free-text answer, for the instructor to fill in
``score`` and ``comment``; ``course grade --import-review review.csv`` reads it
back. The ``attempt`` column ties a row to the attempt it was exported from, so
a score is never applied to a different (resubmitted) answer.

Every text cell is neutralised for spreadsheets: a cell that begins with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` so
that no spreadsheet evaluates it as a formula. Import removes that one quote
again.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from .gradebook import Gradebook
from .private import FILE_MODE, private_dir
from .shown import printable
from .status import AttemptStatus

GRADE_COLUMNS = ["student", "exercise", "status", "auto_score", "auto_possible", "manual_score", "manual_possible",
                 "total", "possible", "review_pending", "reason", "flags", "ignored_files", "attempt"]
REVIEW_COLUMNS = ["student", "exercise", "cell_id", "question", "answer", "rubric", "points_possible", "score",
                  "comment", "attempt"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ATTEMPT_ID_CHARS = 16


def neutralise(value) -> str:
    """A CSV cell a spreadsheet shows as text: formula-like starts get a leading quote."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def unneutralise(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


def _write_csv(path: Path, columns: list[str], rows) -> Path:
    if not path.parent.exists():
        private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists() or tmp.is_symlink():
        tmp.unlink()
    with open(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE), "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for row in rows:
            w.writerow([neutralise(v) for v in row])
    tmp.replace(path)
    return path


def _grade_rows(book: Gradebook, exercise: str | None, students: set[str] | None):
    for r in book.current(exercise, students):
        manual, reviewed = book.manual_score(r["key"])
        yield [printable(x) for x in (  # one line each: names from the submissions folder are escaped
            r["student"], r["exercise_name"] or r["exercise"], r["status"], f"{r['auto_score']:g}",
            f"{r['auto_possible']:g}", f"{manual:g}", f"{r['manual_possible']:g}", f"{r['auto_score'] + manual:g}",
            f"{r['auto_possible'] + r['manual_possible']:g}", "no" if reviewed else "yes", r["reason"],
            "; ".join(json.loads(r["flags"])), "; ".join(json.loads(r["ignored"])), r["key"][:ATTEMPT_ID_CHARS])]


def _review_rows(book: Gradebook, exercise: str | None, students: set[str] | None):
    for r in book.current(exercise, students):
        for a in book.answers(r["key"]):
            yield [r["student"], r["exercise_name"], a["cell_id"], a["question"], a["answer"], a["rubric"],
                   f"{a['points_possible']:g}", "" if a["score"] is None else f"{a['score']:g}", a["comment"],
                   r["key"][:ATTEMPT_ID_CHARS]]


def export_grades(book: Gradebook, path: Path, exercise: str | None = None, students: set[str] | None = None) -> Path:
    return _write_csv(path, GRADE_COLUMNS, _grade_rows(book, exercise, students))


def export_review(book: Gradebook, path: Path, exercise: str | None = None, students: set[str] | None = None) -> Path:
    return _write_csv(path, REVIEW_COLUMNS, _review_rows(book, exercise, students))


def import_review(book: Gradebook, path: Path) -> tuple[int, list[str]]:
    """Apply scores and comments; returns ``(rows applied, problems)``. Bad rows are skipped, not fatal."""
    current = {(r["student"], r["exercise_name"]): r for r in book.current()}
    applied, problems = 0, []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = {"student", "exercise", "cell_id", "score", "comment"} - set(reader.fieldnames or [])
        if missing:
            return 0, [f"{Path(path).name}: missing columns {', '.join(sorted(missing))}"]
        for n, raw in enumerate(reader, start=2):
            row = {k: unneutralise(v or "") for k, v in raw.items() if k is not None}
            where = f"{Path(path).name} line {n}"
            attempt = current.get((row["student"], row["exercise"]))
            if attempt is None:
                problems.append(f"{where}: no graded attempt for {row['student']} / {row['exercise']}")
                continue
            if row.get("attempt") and not attempt["key"].startswith(row["attempt"]):
                problems.append(f"{where}: {row['student']} resubmitted {row['exercise']} "
                                "since this sheet was exported; review the new answer")
                continue
            text = row["score"].strip()
            try:
                score = float(text) if text else None
            except ValueError:
                problems.append(f"{where}: score {text!r} is not a number")
                continue
            possible = next((a["points_possible"] for a in book.answers(attempt["key"])
                             if a["cell_id"] == row["cell_id"]), None)
            if possible is None:
                problems.append(f"{where}: {row['exercise']} has no answer cell {row['cell_id']!r}")
                continue
            if score is not None and not 0 <= score <= possible:
                problems.append(f"{where}: score {score:g} is outside 0..{possible:g}")
                continue
            if attempt["status"] in (AttemptStatus.FLAGGED, AttemptStatus.REJECTED) and score:
                problems.append(f"{where}: the attempt is {attempt['status']} and scores 0; "
                                "the score was recorded as 0")
                score = 0.0
            book.set_review(attempt["key"], row["cell_id"], score, row["comment"].strip())
            applied += 1
    return applied, problems
