"""The SQLite gradebook. Only the grader's own process writes it.

* One row per attempt, keyed by a hash of (student, exercise, submission bytes,
  solution bytes, grader version): grading the same thing twice finds the key
  and skips it (idempotent), and an interrupted run (even ``kill -9``) resumes
  where it stopped, because each attempt is written with its tests, answers and
  feedback cells in one transaction (WAL journal, synchronous=FULL).
* Which attempt counts for a (student, exercise) is stored explicitly in
  ``current``, decided from the files found (see ``discover.choose``), never
  from the order attempts were graded in; ignored duplicates are listed there.
* Hidden tests are stored as id, points and passed/failed only: their messages
  are dropped before they reach this module.
* A flag cleared by an instructor is recorded in ``clearances`` with its reason,
  and the attempt is re-scored from the verdicts already stored.
* The file carries its schema version (``PRAGMA user_version``); opening an older
  gradebook migrates it in one transaction (``MIGRATIONS``), a newer one is refused.

What an attempt holds (``Attempt`` and its tests, answers and cells) is ``results.attempt``'s; this
module stores it and reads it back.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from course_grader.errors import GradebookVersionError
from course_grader.status import AttemptStatus, CellStatus, TestStatus

from .attempt import Attempt
from .posted import POSTS_TABLE
from .private import private_dir, private_file

# Every table, as a new gradebook gets it. A change here is a new SCHEMA_VERSION with its step in MIGRATIONS.
TABLES: dict[str, str] = {
    "attempts": """
CREATE TABLE IF NOT EXISTS attempts (
    key TEXT PRIMARY KEY, student TEXT NOT NULL, exercise TEXT NOT NULL, exercise_name TEXT NOT NULL,
    title TEXT NOT NULL, path TEXT NOT NULL, submission_sha TEXT NOT NULL, source_sha TEXT NOT NULL,
    grader_version TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL, auto_score REAL NOT NULL,
    auto_possible REAL NOT NULL, manual_possible REAL NOT NULL, flags TEXT NOT NULL, notices TEXT NOT NULL,
    notes TEXT NOT NULL, graded_at REAL NOT NULL, seconds REAL NOT NULL);""",
    "tests": """
CREATE TABLE IF NOT EXISTS tests (
    key TEXT NOT NULL REFERENCES attempts(key), test_id TEXT NOT NULL, hidden INTEGER NOT NULL,
    points REAL NOT NULL, earned REAL NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL,
    ord INTEGER NOT NULL, PRIMARY KEY (key, test_id));""",
    "answers": """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT NOT NULL REFERENCES attempts(key), cell_id TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    rubric TEXT NOT NULL, points_possible REAL NOT NULL, score REAL, comment TEXT NOT NULL DEFAULT '',
    ord INTEGER NOT NULL, PRIMARY KEY (key, cell_id));""",
    "cells": """
CREATE TABLE IF NOT EXISTS cells (
    key TEXT NOT NULL REFERENCES attempts(key), ord INTEGER NOT NULL, label TEXT NOT NULL, status TEXT NOT NULL,
    output TEXT NOT NULL, error TEXT NOT NULL, PRIMARY KEY (key, ord));""",
    "current": """
CREATE TABLE IF NOT EXISTS current (
    student TEXT NOT NULL, exercise TEXT NOT NULL, key TEXT NOT NULL REFERENCES attempts(key),
    ignored TEXT NOT NULL, PRIMARY KEY (student, exercise));""",
    "review_kept": """
CREATE TABLE IF NOT EXISTS review_kept (
    student TEXT NOT NULL, exercise TEXT NOT NULL, cell_id TEXT NOT NULL, attempt TEXT NOT NULL,
    score TEXT NOT NULL, comment TEXT NOT NULL, problem TEXT NOT NULL, kept_at REAL NOT NULL,
    PRIMARY KEY (student, exercise, cell_id, attempt));""",
    "clearances": """
CREATE TABLE IF NOT EXISTS clearances (
    key TEXT PRIMARY KEY REFERENCES attempts(key), reason TEXT NOT NULL, flags TEXT NOT NULL,
    cleared_at REAL NOT NULL);""",
    "lms_posts": POSTS_TABLE,
}
# The schema's version, kept in the file's header (PRAGMA user_version). A gradebook without one (0) was
# written before the version was recorded: it has version 1's tables (everything but review_kept).
SCHEMA_VERSION = 3
# version -> the statements that bring a gradebook of the version before it up to it, applied in order
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: (TABLES["review_kept"],),   # kept review scores of a superseded attempt (course grade import-review)
    3: (TABLES["lms_posts"],),     # scores sent to an LMS (course grade post-scores, results/posted.py)
}


def storable(value):
    """``value`` as SQLite (and every page and CSV made from the gradebook) can hold it.

    A string from a submission may hold lone surrogates: a JSON ``\\udc80`` escape in a cell, or a
    file name's undecodable byte (Python reads ``0xff`` as ``\\udcff``). UTF-8 cannot encode them, so
    they are stored as the escape text ``\\udc80``; every other character is kept as it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def storable_json(value) -> str:
    """``value`` (lists, dicts and strings) as JSON text whose strings, read back, are :func:`storable`:
    ``json.dumps`` alone writes a lone surrogate as the escape ``\\udc80``, which ``json.loads`` turns back
    into the surrogate, and the page or CSV made from it could not be written."""
    def clean(item):
        if isinstance(item, str):
            return storable(item)
        if isinstance(item, (list, tuple)):
            return [clean(i) for i in item]
        if isinstance(item, dict):
            return {clean(k): clean(v) for k, v in item.items()}
        return item

    return json.dumps(clean(value))


def _row(*values) -> tuple:
    return tuple(storable(v) for v in values)


class Gradebook:
    def __init__(self, path: Path):
        self.path = Path(path)
        if not self.path.parent.exists():
            private_dir(self.path.parent)
        private_file(self.path)  # 0600 before SQLite opens it; its -wal and -shm files take the same mode
        self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        found = self.db.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:   # before anything writes to the file
            self.db.close()
            raise GradebookVersionError(f"{self.path} was written by a newer grader (gradebook schema {found}; "
                                        f"this grader reads up to {SCHEMA_VERSION}): grade with that grader, "
                                        "or with a new --out folder")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.schema_version = self._bring_up_to_date()

    def _bring_up_to_date(self) -> int:
        """Create the tables of a new gradebook, or migrate an older one step by step; the version it had.

        One transaction: a gradebook is either migrated whole or left as it was. (A gradebook of a newer
        grader was refused before, untouched: ``GradebookVersionError``.)"""
        found = self.db.execute("PRAGMA user_version").fetchone()[0]
        if found == SCHEMA_VERSION:
            return found
        with self.transaction():
            found = self.db.execute("PRAGMA user_version").fetchone()[0]   # another process may have done it
            has_tables = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='attempts'"
                                         ).fetchone() is not None
            if not has_tables:
                steps = [TABLES[name] for name in TABLES]
            else:
                steps = [sql for version in range(max(found, 1) + 1, SCHEMA_VERSION + 1) for sql in MIGRATIONS[version]]
            for sql in steps:
                self.db.execute(sql)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        return found

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self):
        """One write transaction, taken at once (``BEGIN IMMEDIATE``), rolled back by an exception."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ------------------------------------------------------------ writing
    def has(self, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM attempts WHERE key=?", (key,)).fetchone() is not None

    def record(self, a: Attempt, grader_version: str) -> bool:
        """Write one attempt with its tests, answers and feedback cells atomically; False if the key was there."""
        for t in a.tests:
            if t.hidden and t.message:
                raise ValueError(f"{t.test_id}: a hidden test's message must not be stored")
        with self.transaction():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO attempts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                _row(a.key, a.student, a.exercise, a.exercise_name, a.title, a.path, a.submission_sha, a.source_sha,
                     grader_version, AttemptStatus(a.status).value, a.reason, a.auto_score, a.auto_possible,
                     a.manual_possible, storable_json(a.flags), storable_json(a.notices), storable_json(a.notes),
                     time.time(), round(a.seconds, 3)))
            if cur.rowcount == 0:
                return False
            self.db.executemany("INSERT INTO tests VALUES (?,?,?,?,?,?,?,?)",
                                [_row(a.key, t.test_id, int(t.hidden), t.points, t.earned, TestStatus(t.status).value,
                                      "" if t.hidden else t.message, n) for n, t in enumerate(a.tests)])
            self.db.executemany("INSERT INTO answers (key, cell_id, question, answer, rubric, points_possible, ord) "
                                "VALUES (?,?,?,?,?,?,?)",
                                [_row(a.key, x.cell_id, x.question, x.answer, x.rubric, x.points_possible, n)
                                 for n, x in enumerate(a.answers)])
            self.db.executemany("INSERT INTO cells VALUES (?,?,?,?,?,?)",
                                [_row(a.key, n, c.label, CellStatus(c.status).value, c.output, c.error)
                                 for n, c in enumerate(a.cells)])
        return True

    def set_current(self, student: str, exercise: str, key: str, ignored: list[str]) -> None:
        """Say which attempt counts for (student, exercise), and which other files were ignored."""
        with self.transaction():
            self.db.execute("INSERT INTO current VALUES (?,?,?,?) ON CONFLICT(student, exercise) "
                            "DO UPDATE SET key=excluded.key, ignored=excluded.ignored",
                            _row(student, exercise, key, storable_json(sorted(ignored))))

    # ------------------------------------------------------------ reading
    def attempt(self, key: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM attempts WHERE key=?", (key,)).fetchone()

    def find(self, prefix: str) -> list[sqlite3.Row]:
        """Attempts whose key starts with ``prefix`` (hex only)."""
        if not prefix or any(ch not in "0123456789abcdef" for ch in prefix.lower()):
            return []
        return self.db.execute("SELECT * FROM attempts WHERE key LIKE ? ORDER BY key",
                               (prefix.lower() + "%",)).fetchall()

    def current(self, exercise: str | None = None, students: set[str] | None = None) -> list[sqlite3.Row]:
        """The attempt that counts for every (student, exercise), sorted; ``ignored`` is a JSON list."""
        rows = self.db.execute(
            "SELECT a.*, c.ignored AS ignored FROM current c JOIN attempts a ON a.key = c.key "
            "ORDER BY c.student, c.exercise").fetchall()
        return [r for r in rows if (exercise is None or r["exercise"] == exercise)
                and (students is None or r["student"] in students)]

    def tests(self, key: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM tests WHERE key=? ORDER BY ord", (key,)).fetchall()

    def answers(self, key: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM answers WHERE key=? ORDER BY ord", (key,)).fetchall()

    def cells(self, key: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM cells WHERE key=? ORDER BY ord", (key,)).fetchall()

    def clearance(self, key: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM clearances WHERE key=?", (key,)).fetchone()

    def manual_score(self, key: str) -> tuple[float, bool]:
        """``(points given so far, every answer reviewed)``."""
        rows = self.answers(key)
        return sum(r["score"] or 0.0 for r in rows), all(r["score"] is not None for r in rows)

    # ------------------------------------------------------------ instructor actions
    def set_review(self, key: str, cell_id: str, score: float | None, comment: str) -> bool:
        cur = self.db.execute("UPDATE answers SET score=?, comment=? WHERE key=? AND cell_id=?",
                              _row(score, comment, key, cell_id))
        return cur.rowcount == 1

    def keep_review_row(self, student: str, exercise: str, cell_id: str, attempt: str, score: str, comment: str,
                        problem: str) -> None:
        """Keep a review-sheet row that could not be applied, as the instructor typed it, with why:
        ``review.csv`` is exported with it until a later import applies that row."""
        self.db.execute("INSERT INTO review_kept VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(student, exercise, cell_id, "
                        "attempt) DO UPDATE SET score=excluded.score, comment=excluded.comment, "
                        "problem=excluded.problem, kept_at=excluded.kept_at",
                        _row(student, exercise, cell_id, attempt, score, comment, problem, time.time()))

    def drop_kept_review(self, student: str, exercise: str, cell_id: str, attempt: str) -> None:
        self.db.execute("DELETE FROM review_kept WHERE student=? AND exercise=? AND cell_id=? AND attempt=?",
                        (student, exercise, cell_id, attempt))

    def drop_kept_reviews(self, student: str, exercise: str) -> None:
        self.db.execute("DELETE FROM review_kept WHERE student=? AND exercise=?", (student, exercise))

    def kept_reviews(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM review_kept ORDER BY student, exercise, cell_id, attempt").fetchall()

    def clear_flag(self, prefix: str, reason: str) -> sqlite3.Row:
        """Clear the flags of one flagged attempt, with the instructor's reason, and re-score it.

        Tests that passed but were voided by the flag count again; nothing is re-run.
        Raises ``LookupError`` / ``ValueError`` with a message for the instructor."""
        reason = storable(reason.strip())
        if not reason:
            raise ValueError("give the reason for clearing the flag (--reason \"...\")")
        rows = self.find(prefix)
        if not rows:
            raise LookupError(f"no attempt starts with {prefix!r}")
        if len(rows) > 1:
            raise LookupError(f"{prefix!r} matches {len(rows)} attempts; give more of the attempt id")
        row = rows[0]
        if row["status"] != AttemptStatus.FLAGGED:
            raise ValueError(f"attempt {row['key'][:16]} ({row['student']}, {row['exercise_name']}) is "
                             f"{row['status']}, not flagged")
        key = row["key"]
        with self.transaction():
            self.db.execute("UPDATE tests SET status=?, earned=points WHERE key=? AND status=?",
                            (TestStatus.PASSED.value, key, TestStatus.VOIDED.value))
            earned = self.db.execute("SELECT COALESCE(SUM(earned), 0) FROM tests WHERE key=?", (key,)).fetchone()[0]
            self.db.execute("INSERT INTO clearances VALUES (?,?,?,?)", (key, reason, row["flags"], time.time()))
            self.db.execute("UPDATE attempts SET status=?, auto_score=?, reason=? WHERE key=?",
                            (AttemptStatus.GRADED.value, earned, f"flag cleared by the instructor: {reason}", key))
        return self.attempt(key)

    # ------------------------------------------------------------ comparisons
    def snapshot(self) -> dict[str, list[tuple]]:
        """Every row except timings, sorted: two gradebooks with equal snapshots hold the same grades."""
        return {
            "attempts": sorted(tuple(r) for r in self.db.execute(
                "SELECT key, student, exercise, exercise_name, title, path, submission_sha, source_sha, "
                "grader_version, "
                "status, reason, auto_score, auto_possible, manual_possible, flags, notices, notes FROM attempts")),
            "tests": sorted(tuple(r) for r in self.db.execute(
                "SELECT key, test_id, hidden, points, earned, status, message FROM tests")),
            "answers": sorted(tuple(r) for r in self.db.execute("SELECT * FROM answers")),
            "current": sorted(tuple(r) for r in self.db.execute("SELECT * FROM current")),
        }
