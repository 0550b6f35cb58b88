"""The record of scores sent to an LMS: the gradebook's ``lms_posts`` table, one row per score posted.

``course grade post-scores`` writes a row right after the LMS accepted a score (or when the LMS already
held that very score), so an interrupted run leaves every score it sent recorded, with when, and a
re-run knows what is left. The LMS's own results are what a run compares with; this record says what
this gradebook sent, for the instructor and for an LMS whose results cannot be read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# created by the gradebook (its schema version 3; see gradebook.TABLES), which imports it from here: so
# this module takes an open Gradebook as ``book`` without importing that module
POSTS_TABLE = """
CREATE TABLE IF NOT EXISTS lms_posts (
    id INTEGER PRIMARY KEY, student TEXT NOT NULL, exercise TEXT NOT NULL,
    attempt TEXT NOT NULL, lms_user TEXT NOT NULL, line_item TEXT NOT NULL, given REAL NOT NULL,
    maximum REAL NOT NULL, how TEXT NOT NULL, posted_at REAL NOT NULL);"""


@dataclass(frozen=True)
class Post:
    student: str
    exercise: str
    attempt: str
    lms_user: str
    line_item: str          # the line item's URL (its AGS id)
    given: float
    maximum: float
    how: str                # "posted" (sent now) or "found" (the LMS held it already)
    posted_at: float = 0.0


def record(book, post: Post) -> Post:
    """Write one post, at once (its own transaction)."""
    done = Post(**{**post.__dict__, "posted_at": post.posted_at or time.time()})
    with book.transaction():
        book.db.execute("INSERT INTO lms_posts (student, exercise, attempt, lms_user, line_item, given, maximum, "
                        "how, posted_at) VALUES (?,?,?,?,?,?,?,?,?)",
                        (done.student, done.exercise, done.attempt, done.lms_user, done.line_item, done.given,
                         done.maximum, done.how, done.posted_at))
    return done


def latest(book) -> dict[tuple[str, str], Post]:
    """The last post of every (student, exercise)."""
    rows = book.db.execute("SELECT student, exercise, attempt, lms_user, line_item, given, maximum, how, posted_at "
                           "FROM lms_posts ORDER BY id").fetchall()
    return {(r["student"], r["exercise"]): Post(*r) for r in rows}
