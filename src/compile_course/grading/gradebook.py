"""The SQLite gradebook. Only the grader's parent process writes it.

One row per attempt, keyed by a hash of (student, exercise, submission bytes,
solution source bytes, grader version): grading the same thing twice finds
the key and skips it, and an interrupted run resumes where it stopped because
each attempt (with its test and answer rows) is written in one transaction.
The newest attempt of a student on an exercise is the one that counts.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from .verdict import Outcome

SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    key TEXT PRIMARY KEY, student TEXT NOT NULL, exercise TEXT NOT NULL, exercise_name TEXT NOT NULL,
    path TEXT NOT NULL, submission_sha TEXT NOT NULL, source_sha TEXT NOT NULL, grader_version TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL, auto_score REAL NOT NULL, auto_possible REAL NOT NULL,
    manual_possible REAL NOT NULL, flags TEXT NOT NULL, notices TEXT NOT NULL, notes TEXT NOT NULL,
    graded_at REAL NOT NULL, seconds REAL NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_student ON attempts (student, exercise, graded_at);
CREATE TABLE IF NOT EXISTS tests (
    key TEXT NOT NULL REFERENCES attempts(key), cell_id TEXT NOT NULL, kind TEXT NOT NULL, points REAL NOT NULL,
    earned REAL NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL, output TEXT NOT NULL,
    PRIMARY KEY (key, cell_id));
CREATE TABLE IF NOT EXISTS answers (
    key TEXT NOT NULL REFERENCES attempts(key), cell_id TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    rubric TEXT NOT NULL, points_possible REAL NOT NULL, score REAL, comment TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (key, cell_id));
"""


def attempt_key(student: str, exercise: str, submission_sha: str, source_sha: str, grader_version: str) -> str:
    return hashlib.sha256("|".join([student, exercise, submission_sha, source_sha, grader_version]).encode()).hexdigest()


class Gradebook:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def has(self, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM attempts WHERE key=?", (key,)).fetchone() is not None

    def record(self, o: Outcome, grader_version: str) -> bool:
        """Write one attempt with its tests and answers atomically; False if the key was already there."""
        with self.transaction():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO attempts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (o.key, o.student, o.exercise, o.exercise_name, o.path, o.submission_sha, o.source_sha, grader_version,
                 o.status, o.reason, o.auto_score, o.auto_possible, o.manual_possible, json.dumps(o.flags),
                 json.dumps(o.notices), json.dumps(o.notes), time.time(), round(o.seconds, 3)))
            if cur.rowcount == 0:
                return False
            self.db.executemany("INSERT INTO tests VALUES (?,?,?,?,?,?,?,?)",
                                [(o.key, t.cell_id, t.kind, t.points, t.earned, t.status, t.message, t.output) for t in o.tests])
            self.db.executemany("INSERT INTO answers (key, cell_id, question, answer, rubric, points_possible) VALUES (?,?,?,?,?,?)",
                                [(o.key, a.cell_id, a.question, a.answer, a.rubric, a.points_possible) for a in o.answers])
        return True

    def transaction(self):
        db = self.db

        class _Tx:
            def __enter__(self):
                db.execute("BEGIN IMMEDIATE")

            def __exit__(self, exc_type, *_):
                db.execute("ROLLBACK" if exc_type else "COMMIT")
                return False

        return _Tx()

    def current(self, exercise: str | None = None) -> list[sqlite3.Row]:
        """The newest attempt of every (student, exercise), sorted."""
        rows = self.db.execute(
            """SELECT a.* FROM attempts a WHERE a.graded_at = (SELECT MAX(b.graded_at) FROM attempts b
               WHERE b.student = a.student AND b.exercise = a.exercise) ORDER BY a.student, a.exercise""").fetchall()
        return [r for r in rows if exercise is None or r["exercise"] == exercise]

    def tests(self, key: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM tests WHERE key=? ORDER BY rowid", (key,)).fetchall()

    def answers(self, key: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM answers WHERE key=? ORDER BY rowid", (key,)).fetchall()

    def manual_score(self, key: str) -> tuple[float, bool]:
        """``(points given so far, every answer reviewed)``."""
        rows = self.answers(key)
        return sum(r["score"] or 0.0 for r in rows), all(r["score"] is not None for r in rows)

    def set_review(self, key: str, cell_id: str, score: float | None, comment: str) -> bool:
        cur = self.db.execute("UPDATE answers SET score=?, comment=? WHERE key=? AND cell_id=?", (score, comment, key, cell_id))
        return cur.rowcount == 1

    def snapshot(self) -> dict[str, list[tuple]]:
        """Every row except timings, sorted: two gradebooks with equal snapshots hold the same grades."""
        return {
            "attempts": sorted(tuple(r) for r in self.db.execute(
                "SELECT key, student, exercise, exercise_name, path, submission_sha, source_sha, grader_version, status, "
                "reason, auto_score, auto_possible, manual_possible, flags, notices, notes FROM attempts")),
            "tests": sorted(tuple(r) for r in self.db.execute("SELECT key, cell_id, kind, points, earned, status, message FROM tests")),
            "answers": sorted(tuple(r) for r in self.db.execute("SELECT * FROM answers")),
        }
