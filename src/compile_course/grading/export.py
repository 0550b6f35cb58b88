"""CSV exports from the gradebook, and the manual review sheet (out and back in).

``grades.csv``: one row per student and exercise (the newest attempt).
``review.csv``: one row per free-text answer, for the instructor to fill in
``score`` and ``comment``; ``course grade --import-review review.csv`` reads
it back. The ``attempt`` column ties a row to the attempt it was exported
from, so a score is never applied to a different (resubmitted) answer.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .gradebook import Gradebook

GRADE_COLUMNS = ["student", "exercise", "status", "auto_score", "auto_possible", "manual_score", "manual_possible",
                 "total", "possible", "review_pending", "reason", "flags", "attempt"]
REVIEW_COLUMNS = ["student", "exercise", "cell_id", "question", "answer", "rubric", "points_possible", "score", "comment", "attempt"]


def _write_csv(path: Path, columns: list[str], rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows(rows)
    return path


def _grade_rows(book: Gradebook, exercise: str | None):
    for r in book.current(exercise):
        manual, reviewed = book.manual_score(r["key"])
        yield [r["student"], r["exercise_name"], r["status"], f"{r['auto_score']:g}", f"{r['auto_possible']:g}",
               f"{manual:g}", f"{r['manual_possible']:g}", f"{r['auto_score'] + manual:g}",
               f"{r['auto_possible'] + r['manual_possible']:g}", "no" if reviewed else "yes", r["reason"],
               "; ".join(json.loads(r["flags"])), r["key"][:16]]


def _review_rows(book: Gradebook, exercise: str | None):
    for r in book.current(exercise):
        for a in book.answers(r["key"]):
            yield [r["student"], r["exercise_name"], a["cell_id"], a["question"], a["answer"], a["rubric"],
                   f"{a['points_possible']:g}", "" if a["score"] is None else f"{a['score']:g}", a["comment"], r["key"][:16]]


def export_grades(book: Gradebook, path: Path, exercise: str | None = None) -> Path:
    """The newest attempt per student and exercise, one row each."""
    return _write_csv(path, GRADE_COLUMNS, _grade_rows(book, exercise))


def export_review(book: Gradebook, path: Path, exercise: str | None = None) -> Path:
    """One row per free-text answer, with rubric and empty score/comment for the instructor."""
    return _write_csv(path, REVIEW_COLUMNS, _review_rows(book, exercise))


def import_review(book: Gradebook, path: Path) -> tuple[int, list[str]]:
    """Apply scores and comments; returns ``(rows applied, problems)``. Bad rows are skipped, not fatal."""
    current = {(r["student"], r["exercise_name"]): r for r in book.current()}
    applied, problems = 0, []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = {"student", "exercise", "cell_id", "score", "comment"} - set(reader.fieldnames or [])
        if missing:
            return 0, [f"{path.name}: missing columns {', '.join(sorted(missing))}"]
        for n, row in enumerate(reader, start=2):
            where = f"{path.name} line {n}"
            attempt = current.get((row["student"], row["exercise"]))
            if attempt is None:
                problems.append(f"{where}: no graded attempt for {row['student']} / {row['exercise']}")
                continue
            if row.get("attempt") and not attempt["key"].startswith(row["attempt"]):
                problems.append(f"{where}: {row['student']} resubmitted {row['exercise']} since this sheet was exported; review the new answer")
                continue
            text = (row.get("score") or "").strip()
            try:
                score = float(text) if text else None
            except ValueError:
                problems.append(f"{where}: score {text!r} is not a number")
                continue
            possible = next((a["points_possible"] for a in book.answers(attempt["key"]) if a["cell_id"] == row["cell_id"]), None)
            if possible is None:
                problems.append(f"{where}: {row['exercise']} has no answer cell {row['cell_id']!r}")
                continue
            if score is not None and not 0 <= score <= possible:
                problems.append(f"{where}: score {score:g} is outside 0..{possible:g}")
                continue
            if attempt["status"] == "flagged" and score:
                problems.append(f"{where}: the attempt is flagged and scores 0; the score was recorded as 0")
                score = 0.0
            book.set_review(attempt["key"], row["cell_id"], score, (row.get("comment") or "").strip())
            applied += 1
    return applied, problems
