"""The exchange's storage: one sqlite database (WAL mode) that indexes files that are never overwritten.

Layout under the storage root (0700, owned by the service's user; every file 0600)::

    exchange.sqlite              the index (schema version in PRAGMA user_version)
    handins/COURSE/STUDENT/NNNNNN__exNN_slug.ipynb     one file per hand-in, NNNNNN its row id
    feedback/COURSE/STUDENT/NNNNNN/*.html              one folder per return, NNNNNN its row id

Why sqlite in WAL mode and not file locks: the index is read far more often than written (every list,
every collect), WAL lets readers go on while one writer commits, and a transaction makes "row + file"
one step: a hand-in's file is written to a temporary name, linked to its final name (``os.link`` fails
rather than replace an existing file) and only then is the row committed. A crash leaves at most an
unreferenced temporary file, never a row without its file. The service is one process; ``busy_timeout``
covers a second one (a ``course`` command an administrator runs on the storage, say).

Names on disk are built only from ids the exchange has validated (course ids, hub user names that are
grader student ids, exercise names from the grader) and row ids, never from what a request typed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SCHEMA_VERSION = 1
DIR_MODE = 0o700
FILE_MODE = 0o600

SCHEMA = """
CREATE TABLE IF NOT EXISTS handins (
    id INTEGER PRIMARY KEY,
    course TEXT NOT NULL, student TEXT NOT NULL, exercise TEXT NOT NULL, exercise_name TEXT NOT NULL,
    received TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, file TEXT NOT NULL,
    warnings TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS handins_by_student ON handins (course, student, exercise);
CREATE TABLE IF NOT EXISTS deadlines (
    course TEXT NOT NULL, exercise TEXT NOT NULL, deadline TEXT NOT NULL, set_by TEXT NOT NULL,
    set_at TEXT NOT NULL, PRIMARY KEY (course, exercise)
);
CREATE TABLE IF NOT EXISTS returns (
    id INTEGER PRIMARY KEY,
    course TEXT NOT NULL, student TEXT NOT NULL, returned TEXT NOT NULL, returned_by TEXT NOT NULL,
    score TEXT NOT NULL, pages TEXT NOT NULL, folder TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS returns_by_student ON returns (course, student);
"""


def now() -> datetime:
    return datetime.now(UTC)


def stamp(t: datetime) -> str:
    """ISO 8601 in UTC with microseconds: sorts as text in time order."""
    return t.astimezone(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Handin:
    id: int
    course: str
    student: str
    exercise: str
    exercise_name: str
    received: str
    sha256: str
    size: int
    file: str            # relative to the storage root
    warnings: list[str]
    late: bool = False
    counts: bool = False

    def public(self) -> dict:
        """What a caller is told (never the path on disk)."""
        return {"id": self.id, "course": self.course, "student": self.student, "exercise": self.exercise,
                "exercise_name": self.exercise_name, "received": self.received, "sha256": self.sha256,
                "size": self.size, "late": self.late, "counts": self.counts, "warnings": self.warnings}


def _mkdirs(root: Path, rel: Path) -> Path:
    """``root/rel`` with every folder on the way created 0700 (and made 0700 if it was not)."""
    path = root
    for part in rel.parts:
        path = path / part
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        if path.is_symlink() or not path.is_dir():
            raise RuntimeError(f"{path}: expected a folder of the exchange's storage")
    return path


def _write_new(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` as ``folder/name`` atomically; never replaces a file (FileExistsError instead)."""
    final = folder / name
    tmp = folder / f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


class Store:
    """The storage root and its index. One instance per process; methods are short transactions."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(self.root, DIR_MODE)
        self.db = sqlite3.connect(self.root / "exchange.sqlite", timeout=30, isolation_level=None,
                                  check_same_thread=False)
        os.chmod(self.root / "exchange.sqlite", FILE_MODE)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=30000")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.root}: exchange storage of schema {version}, newer than this code's "
                               f"{SCHEMA_VERSION}; run the newer course code")
        self.db.executescript(SCHEMA)
        self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        for extra in ("exchange.sqlite-wal", "exchange.sqlite-shm"):
            if (self.root / extra).exists():
                os.chmod(self.root / extra, FILE_MODE)

    def close(self) -> None:
        self.db.close()

    # -- hand-ins ---------------------------------------------------------------------------------------
    def usage(self, course: str, student: str) -> tuple[int, int]:
        """(hand-ins, bytes) stored for ``student`` in ``course``."""
        row = self.db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM handins WHERE course=? AND student=?",
                              (course, student)).fetchone()
        return int(row[0]), int(row[1])

    def add_handin(self, course: str, student: str, exercise: str, exercise_name: str, data: bytes,
                   warnings: list[str], *, received: datetime | None = None) -> Handin:
        """Store one hand-in; ``received`` is when it arrived (default: now), which decides whether it is late."""
        folder = _mkdirs(self.root, Path("handins", course, student))
        sha = hashlib.sha256(data).hexdigest()
        tmp_name = f".new-{os.urandom(8).hex()}"
        tmp = _write_new(folder, tmp_name, data)
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                cur = self.db.execute(
                    "INSERT INTO handins (course, student, exercise, exercise_name, received, sha256, size, file, "
                    "warnings) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?)",
                    (course, student, exercise, exercise_name, stamp(received or now()), sha, len(data),
                     json.dumps(warnings)))
                hid = cur.lastrowid
                rel = Path("handins", course, student, f"{hid:06d}__{exercise_name}.ipynb")
                os.link(tmp, self.root / rel)      # FileExistsError: never replace a stored hand-in
                self.db.execute("UPDATE handins SET file=? WHERE id=?", (str(rel), hid))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        finally:
            tmp.unlink(missing_ok=True)
        return self.handin(hid)

    def handin(self, hid: int) -> Handin | None:
        row = self.db.execute("SELECT * FROM handins WHERE id=?", (hid,)).fetchone()
        return None if row is None else _handin(row)

    def handin_bytes(self, h: Handin) -> bytes:
        return (self.root / h.file).read_bytes()

    def handins(self, course: str, student: str | None = None) -> list[Handin]:
        """Every hand-in of ``course`` (of one student when given), each marked late and counting."""
        if student is None:
            rows = self.db.execute("SELECT * FROM handins WHERE course=? ORDER BY id", (course,)).fetchall()
        else:
            rows = self.db.execute("SELECT * FROM handins WHERE course=? AND student=? ORDER BY id",
                                   (course, student)).fetchall()
        return mark(list(map(_handin, rows)), self.deadlines(course))

    # -- deadlines ----------------------------------------------------------------------------------------
    def deadlines(self, course: str) -> dict[str, str]:
        return {r["exercise"]: r["deadline"] for r in
                self.db.execute("SELECT exercise, deadline FROM deadlines WHERE course=?", (course,))}

    def set_deadlines(self, course: str, deadlines: dict[str, str | None], by: str) -> dict[str, str]:
        """Set (or, with None, remove) the deadline of each exercise named; all in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for exercise, deadline in deadlines.items():
                if deadline is None:
                    self.db.execute("DELETE FROM deadlines WHERE course=? AND exercise=?", (course, exercise))
                else:
                    self.db.execute("INSERT OR REPLACE INTO deadlines VALUES (?, ?, ?, ?, ?)",
                                    (course, exercise, deadline, by, stamp(now())))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return self.deadlines(course)

    # -- feedback -----------------------------------------------------------------------------------------
    def add_return(self, course: str, student: str, score: dict, pages: dict[str, bytes], by: str) -> dict:
        """Store one student's returned pages as a new folder (an earlier return stays on disk)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cur = self.db.execute(
                "INSERT INTO returns (course, student, returned, returned_by, score, pages, folder) "
                "VALUES (?, ?, ?, ?, ?, ?, '')",
                (course, student, stamp(now()), by, json.dumps(score), json.dumps(sorted(pages))))
            rid = cur.lastrowid
            rel = Path("feedback", course, student, f"{rid:06d}")
            _mkdirs(self.root, rel.parent)
            (self.root / rel).mkdir(mode=DIR_MODE)   # FileExistsError: never reuse a folder
            for name, data in pages.items():
                _write_new(self.root / rel, name, data)
            self.db.execute("UPDATE returns SET folder=? WHERE id=?", (str(rel), rid))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return self.feedback(course, student)

    def feedback(self, course: str, student: str) -> dict | None:
        """The latest return for ``student``: ``{id, returned, score, pages}``, or None."""
        row = self.db.execute("SELECT * FROM returns WHERE course=? AND student=? AND folder != '' "
                              "ORDER BY id DESC LIMIT 1", (course, student)).fetchone()
        if row is None:
            return None
        return {"id": row["id"], "returned": row["returned"], "score": json.loads(row["score"]),
                "pages": json.loads(row["pages"]), "folder": row["folder"]}

    def feedback_page(self, course: str, student: str, page: str) -> bytes | None:
        fb = self.feedback(course, student)
        if fb is None or page not in fb["pages"]:
            return None
        return (self.root / fb["folder"] / page).read_bytes()


def _handin(row: sqlite3.Row) -> Handin:
    return Handin(row["id"], row["course"], row["student"], row["exercise"], row["exercise_name"], row["received"],
                  row["sha256"], row["size"], row["file"], json.loads(row["warnings"]))


def mark(handins: list[Handin], deadlines: dict[str, str]) -> list[Handin]:
    """Which hand-in counts for each (student, exercise): the latest received by the exercise's deadline
    (the latest of all when there is no deadline); when all came after the deadline, the latest, late.
    Every hand-in after the deadline is marked late; none is dropped. "Latest" is by the time received
    (then by id): two hand-ins checked at once may be stored in the other order. The list keeps its order."""
    from dataclasses import replace

    def received(h: Handin) -> datetime:
        return datetime.fromisoformat(h.received)

    out: list[Handin] = []
    latest: dict[tuple[str, str], int] = {}
    latest_on_time: dict[tuple[str, str], int] = {}
    for h in handins:
        d = deadlines.get(h.exercise)
        out.append(replace(h, late=d is not None and received(h) > datetime.fromisoformat(d)))
    for i in sorted(range(len(out)), key=lambda i: (received(out[i]), out[i].id)):
        key = (out[i].student, out[i].exercise)
        latest[key] = i
        if not out[i].late:
            latest_on_time[key] = i
    for key, i in latest.items():
        j = latest_on_time.get(key, i)
        out[j] = replace(out[j], counts=True)
    return out
