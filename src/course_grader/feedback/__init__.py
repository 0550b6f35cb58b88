"""Feedback pages from the gradebook, rendered with Jinja2 templates (autoescaped).

``attempt.html.j2``: one page per student and exercise, carrying the exercise's
title, the attempt id and the date it was graded, the score, each test's result
(a hidden test shows only its id, points and passed/failed), integrity findings,
the output and errors of the student's own cells from the feedback run, and the
instructor's review of free-text answers. ``index.html.j2``: the class index,
listing every student with a link to each of their pages.

Paths are built only from validated ids (student ids from ``discover.STUDENT_ID``,
exercise names from the ``Exercise`` model) and checked to stay inside the
output folder, so nothing is written elsewhere whatever a file was called.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..discover import STUDENT_ID
from ..gradebook import Gradebook
from ..private import FILE_MODE, private_dir

TEMPLATES = Path(__file__).resolve().parent
PAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$")
MAX_SHOWN_CHARS = 6000


class UnsafePath(ValueError):
    """A feedback path would not be a plain file inside the output folder."""


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["num"] = lambda x: f"{x:g}"
    env.filters["clip"] = lambda s: s if len(s) <= MAX_SHOWN_CHARS else s[:MAX_SHOWN_CHARS] + "\n[... cut]"
    env.filters["date"] = lambda t: datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return env


def page_name(row) -> str:
    """The page's file stem: the exercise name when it is a validated one, else the attempt id."""
    name = row["exercise_name"]
    return name if name and PAGE_NAME.match(name) else f"attempt-{row['key'][:16]}"


def page_path(out_dir: Path, student: str, name: str) -> Path:
    """``OUT/feedback/STUDENT/NAME.html``, refusing anything that is not a validated id."""
    if not STUDENT_ID.match(student) or student in (".", "..") or not PAGE_NAME.match(name):
        raise UnsafePath(f"refusing to build a feedback path from {student!r}/{name!r}")
    root = (Path(out_dir) / "feedback").resolve()
    path = (root / student / f"{name}.html").resolve()
    if not path.is_relative_to(root) or path.parent.parent != root:
        raise UnsafePath(f"{path} is not inside {root}")
    return path


def _write(path: Path, text: str) -> Path:
    if not path.parent.exists():
        private_dir(path.parent)
    if path.is_symlink():
        path.unlink()
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists() or tmp.is_symlink():
        tmp.unlink()
    with open(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE), "w", encoding="utf-8") as fh:
        fh.write(text)
    tmp.replace(path)
    return path


def render_attempt(book: Gradebook, row, out_dir: Path, env: Environment | None = None) -> Path:
    env = env or _env()
    manual, reviewed = book.manual_score(row["key"])
    clearance = book.clearance(row["key"])
    page = env.get_template("attempt.html.j2").render(
        a=row, attempt_id=row["key"][:16], manual=manual, reviewed=reviewed,
        total=row["auto_score"] + manual, possible=row["auto_possible"] + row["manual_possible"],
        flags=json.loads(row["flags"]), notices=json.loads(row["notices"]), notes=json.loads(row["notes"]),
        ignored=json.loads(row["ignored"]) if "ignored" in row.keys() else [],
        tests=book.tests(row["key"]), cells=book.cells(row["key"]), answers=book.answers(row["key"]),
        clearance=clearance)
    return _write(page_path(out_dir, row["student"], page_name(row)), page)


def render_index(book: Gradebook, out_dir: Path, rows, title: str, env: Environment | None = None) -> Path:
    env = env or _env()
    students: dict[str, list] = {}
    for r in rows:
        students.setdefault(r["student"], []).append(
            {"row": r, "href": f"{r['student']}/{page_name(r)}.html",
             "manual": book.manual_score(r["key"])[0]})
    text = env.get_template("index.html.j2").render(title=title, students=students)
    root = (Path(out_dir) / "feedback").resolve()
    return _write(root / "index.html", text)


def render_all(book: Gradebook, out_dir: Path, exercise: str | None = None, students: set[str] | None = None,
               title: str = "Grades") -> list[Path]:
    """Every counted attempt's page (optionally one exercise / some students), plus the class index."""
    env = _env()
    rows = [r for r in book.current(exercise, students) if STUDENT_ID.match(r["student"])]
    pages = [render_attempt(book, r, out_dir, env) for r in rows]
    pages.append(render_index(book, out_dir, book.current(None, students), title, env))
    return pages
