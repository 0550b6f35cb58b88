"""CSV exports from the gradebook, and the manual review sheet (out and back in).

``grades.csv``: one row per student and exercise (the attempt that counts).
``review.csv``: one row per free-text answer, for the instructor to fill in
``score`` and ``comment``; ``course grade import-review review.csv`` reads it
back. The ``attempt`` column ties a row to the attempt it was exported from, so
a score is never applied to a different (resubmitted) answer.

Every text cell is neutralised for spreadsheets: a cell that begins with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` so
that no spreadsheet evaluates it as a formula. Import removes that one quote
again.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from course_grader.errors import SheetError
from course_grader.status import AttemptStatus

from .gradebook import Gradebook
from .private import FILE_MODE, private_dir
from .shown import printable

GRADE_COLUMNS = ["student", "exercise", "status", "auto_score", "auto_possible", "manual_score", "manual_possible",
                 "total", "possible", "review_pending", "reason", "flags", "ignored_files", "attempt"]
REVIEW_COLUMNS = ["student", "exercise", "cell_id", "question", "answer", "rubric", "points_possible", "score",
                  "comment", "attempt", "problem"]
REVIEW_NEEDED = ["student", "exercise", "cell_id", "score", "comment"]   # what an import reads (and "attempt")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ATTEMPT_ID_CHARS = 16


def neutralise(value) -> str:
    """A CSV cell a spreadsheet shows as text: formula-like starts get a leading quote."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def unneutralise(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


def write_csv(path: Path, columns: list[str], rows) -> Path:
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
    """One row per answer of the counted attempts; a row an import could not apply (``review_kept``)
    shows what the instructor typed and, in ``problem``, why it was not applied. A kept row whose
    answer is no longer counted (a resubmission) follows as a row of its own, with its old attempt id."""
    kept = {(k["student"], k["exercise"], k["cell_id"], k["attempt"]): k for k in book.kept_reviews()}
    names = set()
    for r in book.current(exercise, students):
        names.add(r["exercise_name"])
        attempt = r["key"][:ATTEMPT_ID_CHARS]
        for a in book.answers(r["key"]):
            k = kept.pop((r["student"], r["exercise_name"], a["cell_id"], attempt), None)
            score = "" if a["score"] is None else f"{a['score']:g}"
            yield [r["student"], r["exercise_name"], a["cell_id"], a["question"], a["answer"], a["rubric"],
                   f"{a['points_possible']:g}", k["score"] if k else score, k["comment"] if k else a["comment"],
                   attempt, k["problem"] if k else ""]
    for (student, name, cell_id, attempt), k in kept.items():
        if (students is None or student in students) and (exercise is None or name in names):
            yield [student, name, cell_id, "", "", "", "", k["score"], k["comment"], attempt, k["problem"]]


def export_grades(book: Gradebook, path: Path, exercise: str | None = None, students: set[str] | None = None) -> Path:
    return write_csv(path, GRADE_COLUMNS, _grade_rows(book, exercise, students))


def export_review(book: Gradebook, path: Path, exercise: str | None = None, students: set[str] | None = None) -> Path:
    return write_csv(path, REVIEW_COLUMNS, _review_rows(book, exercise, students))


@dataclass
class ReviewImport:
    scored: int = 0          # rows whose score was recorded
    commented: int = 0       # rows with a comment and no score (the comment was recorded)
    blank: int = 0           # rows with neither: nothing changed
    kept: list[str] = field(default_factory=list)    # rows not applied, kept in review.csv with the reason
    notes: list[str] = field(default_factory=list)   # applied, but with something to know
    problems: dict[int, str] = field(default_factory=dict)   # sheet row index -> why it was not applied
    sheet: Sheet | None = None
    annotated: Path | None = None    # the imported sheet, written back with its 'problem' column (import_into)
    review_csv: Path | None = None

    def summary(self) -> str:
        """One line: what was applied, and where the rows not applied are to be fixed."""
        where = " and of ".join(str(p) for p in (self.annotated, self.review_csv) if p) or "review.csv"
        return (f"review: {self.scored} answers scored, {self.commented} comments without a score, "
                f"{self.blank} rows left blank, {len(self.kept)} rows not applied"
                + (f" (kept as you typed them; the reason is in the 'problem' column of {where}: fix them "
                   "there and import again)" if self.kept else ""))


def header_key(name: str) -> str:
    return " ".join((name or "").replace("\ufeff", "").split()).lower().replace(" ", "_")


@dataclass
class Sheet:
    """A review sheet as read: its rows, and what it takes to write it back as it was saved."""

    path: Path
    header: list[str]                     # the header cells as typed
    columns: list[str]                    # their ``header_key``s
    cells: list[list[str]]                # each row's cells as typed (still neutralised)
    rows: list[dict[str, str]]            # each row by column, neutralising quote removed
    lines: list[int]                      # the file's own line number where each row starts
    delimiter: str = ","
    bom: bool = False
    newline: str = "\r\n"


def read_sheet(path: Path) -> Sheet:
    """A review sheet as a person may have saved it: UTF-8 with or without a BOM, any line endings,
    ``,`` ``;`` or tab between cells, header names in any case and with stray spaces. A row's line is
    the line of the file it starts on (an answer may span many lines). Raises ``SheetError`` for
    anything else (another encoding, a missing or renamed column)."""
    name = Path(path).name
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SheetError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SheetError(f"{name} is not UTF-8 text (byte {exc.start}): save it as 'CSV UTF-8' (Excel: "
                         "CSV UTF-8 (Comma delimited); LibreOffice: character set Unicode (UTF-8))") from None
    first = text.splitlines()[0] if text.strip() else ""
    delimiter = max((",", ";", "\t"), key=first.count) if first else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise SheetError(f"{name} is empty") from None
    columns = [header_key(h) for h in header]
    missing = [c for c in REVIEW_NEEDED if c not in columns]
    if missing:
        unknown = [h for h, c in zip(header, columns, strict=True) if c not in REVIEW_COLUMNS]
        raise SheetError(f"{name}: no column {', '.join(repr(m) for m in missing)} in its header"
                         + (f" (columns it does not know: {', '.join(repr(u) for u in unknown)})" if unknown else "")
                         + f"; the header must name {', '.join(REVIEW_NEEDED)} (and attempt), as exported")
    twice = sorted({c for c in columns if c and columns.count(c) > 1})
    if twice:
        raise SheetError(f"{name}: column {', '.join(repr(t) for t in twice)} appears more than once in the header")
    sheet = Sheet(Path(path), header, columns, [], [], [], delimiter, data.startswith(b"\xef\xbb\xbf"),
                  "\r\n" if "\r\n" in text else "\n")
    try:
        while True:
            start = reader.line_num + 1          # the record begins on the line after the last one read
            try:
                cells = next(reader)
            except StopIteration:
                break
            if not cells:
                continue                         # a blank line
            sheet.cells.append(cells)
            sheet.lines.append(start)
            sheet.rows.append({c: unneutralise(cells[i] if i < len(cells) else "") for i, c in enumerate(columns)
                               if c})
    except csv.Error as exc:
        raise SheetError(f"{name} line {reader.line_num}: {exc}") from None
    return sheet


def annotate_sheet(sheet: Sheet, problems: dict[int, str]) -> Path:
    """Write ``sheet`` back where it was read, every cell as typed, with its ``problem`` column (added
    when it has none) saying why each row in ``problems`` (by row index) was not applied, and empty for
    the others: the instructor fixes the rows in the file they imported. Same delimiter, BOM and line
    endings; written to a temporary file first, so a failure leaves the sheet as it was. Raises ``OSError``."""
    header, cells = list(sheet.header), [list(c) for c in sheet.cells]
    if "problem" in sheet.columns:
        at = sheet.columns.index("problem")
    else:
        at = len(header)
        header.append("problem")
    for i, row in enumerate(cells):
        row.extend([""] * (at + 1 - len(row)))
        row[at] = neutralise(problems.get(i, ""))
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=sheet.delimiter, lineterminator=sheet.newline)
    writer.writerow(header)
    writer.writerows(cells)
    path = sheet.path
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write((b"\xef\xbb\xbf" if sheet.bom else b"") + out.getvalue().encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _apply_row(book: Gradebook, current: dict, row: dict[str, str], result: ReviewImport, where: str) -> str:
    """Apply one sheet row; "" when done, else why it cannot be applied."""
    student, exercise, cell_id, sheet_attempt, text, comment = (
        row.get(k, "").strip() for k in ("student", "exercise", "cell_id", "attempt", "score", "comment"))
    attempt = current.get((student, exercise))
    if attempt is None:
        return f"no graded attempt for {student or '(no student)'} / {exercise or '(no exercise)'}"
    if sheet_attempt and not attempt["key"].startswith(sheet_attempt):
        return (f"{student} resubmitted {exercise} since this row was exported: review the new answer "
                "(its own row), then delete this one")
    try:
        score = float(text.replace(",", ".")) if text else None
    except ValueError:
        return f"score {text!r} is not a number"
    before = next((a for a in book.answers(attempt["key"]) if a["cell_id"] == cell_id), None)
    if before is None:
        return f"{exercise} has no answer cell {cell_id!r}"
    possible = before["points_possible"]
    if score is not None and not (0 <= score <= possible):
        return f"score {score:g} is outside 0..{possible:g}"
    if attempt["status"] in (AttemptStatus.FLAGGED, AttemptStatus.REJECTED) and score:
        result.notes.append(f"{where}: the attempt is {attempt['status']} and scores 0; the score was recorded as 0")
        score = 0.0
    book.drop_kept_review(student, exercise, cell_id, sheet_attempt)
    if score is None and not comment:
        result.blank += 1
        return ""
    book.set_review(attempt["key"], cell_id, before["score"] if score is None else score, comment or before["comment"])
    if score is None:
        result.commented += 1
    else:
        result.scored += 1
    return ""


def import_review(book: Gradebook, path: Path) -> ReviewImport:
    """Apply the scores and comments of a review sheet. A sheet that cannot be read raises ``SheetError``
    before anything changes. A row that cannot be applied is kept as typed (``Gradebook.keep_review_row``)
    and shown again in ``review.csv`` with its ``problem``; ``ReviewImport.problems`` says which rows of
    the sheet they were (for ``annotate_sheet``). Every message names the sheet's own line numbers. A
    blank score never erases one recorded earlier."""
    sheet = read_sheet(path)
    name = Path(path).name
    current = {(r["student"], r["exercise_name"]): r for r in book.current()}
    result = ReviewImport(sheet=sheet)
    with book.transaction():
        # The sheet is the instructor's latest word on the answers it lists: rows kept from an earlier
        # import for those (student, exercise) are replaced by what this sheet says (a row deleted goes).
        for pair in {(r.get("student", "").strip(), r.get("exercise", "").strip()) for r in sheet.rows}:
            book.drop_kept_reviews(*pair)
        for i, (line, row) in enumerate(zip(sheet.lines, sheet.rows, strict=True)):
            if not any(v.strip() for v in row.values()):
                continue                                   # a row of empty cells
            where = f"{name} line {line}"
            if problem := _apply_row(book, current, row, result, where):
                book.keep_review_row(*(row.get(k, "").strip() for k in ("student", "exercise", "cell_id", "attempt")),
                                     row.get("score", ""), row.get("comment", ""), problem)
                result.kept.append(f"{where}: {problem}")
                result.problems[i] = problem
    return result


def import_into(book: Gradebook, path: Path, review_csv: Path) -> ReviewImport:
    """``import_review``, then the reasons written into the imported sheet itself (``annotate_sheet``)
    unless it is ``review_csv`` (OUT/review.csv, which the caller rewrites with the same reasons).
    A sheet that cannot be written back is said in ``notes``; nothing is lost, the reasons are kept."""
    result = import_review(book, path)
    try:
        same = os.path.samefile(path, review_csv)
    except OSError:
        same = False
    result.review_csv = review_csv
    if not same:
        try:
            result.annotated = annotate_sheet(result.sheet, result.problems)
        except OSError as exc:
            result.notes.append(f"could not write the reasons into {path} ({exc.strerror or exc}); "
                                f"they are in {review_csv}")
    return result
