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
from markdown_it import MarkdownIt
from markupsafe import Markup

from course_grader.errors import UnsafePath
from course_grader.exercise.model import MARKERS
from course_grader.intake.discover import STUDENT_ID

from ..gradebook import Gradebook
from ..private import FILE_MODE, private_dir

TEMPLATES = Path(__file__).resolve().parent
PAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$")
MAX_SHOWN_CHARS = 6000


# A frame of a Python traceback, alone or after a log prefix (torch's graph-break log prints the
# user stack as "V1202 ... [__graph_breaks]   File "...", line 5, in f").
FRAME = re.compile(r'^(?P<prefix>.*?)(?P<indent> +)File "(?P<file>[^"]*)", line \d+')


def grader_frame(file: str) -> bool:
    """Whether a traceback frame is the grader's, not the student's: a file of the grader's sandbox
    package (the kernel, its template and worker) or of IPython (the shell that runs the cell), or
    the interpreter's start-up (``<frozen runpy>``) that launches the sandbox. Matched by path parts,
    so it holds wherever the grader is installed (a cluster worker's checkout too)."""
    return "/course_grader/sandbox/" in file or "/IPython/" in file or file == "<frozen runpy>"


def hide_grader_frames(text: str) -> str:
    """``text`` without the grader's frames (see ``grader_frame``): each such ``File "..."`` line
    goes with the lines of that frame (its source line and ``^^^`` markers: the same prefix, more
    indented). Every other line, torch's own included, is kept as it was."""
    if 'File "' not in text:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        m = FRAME.match(lines[i])
        if not (m and grader_frame(m["file"])):
            kept.append(lines[i])
            i += 1
            continue
        prefix, depth = m["prefix"], len(m["indent"])
        i += 1
        while i < len(lines) and lines[i].startswith(prefix):
            rest = lines[i][len(prefix):]
            body = rest.lstrip(" ")
            if not body or len(rest) - len(body) <= depth or body.startswith('File "'):
                break
            i += 1
    return "\n".join(kept)


SOLUTION_MARKER = re.compile(r"^[ \t]*(?:" + "|".join(re.escape(m) for m in MARKERS) + r")[ \t]*(?:\r?\n|$)"
                             r"|(?:" + "|".join(re.escape(m) for m in MARKERS) + ")", re.MULTILINE)


def without_markers(text: str) -> str:
    """``text`` without the solution markers (``<!-- BEGIN SOLUTION -->``...): a model answer shown to a
    student (the samples', a copy answered from the solutions) reads as an answer, not as its source."""
    return SOLUTION_MARKER.sub("", text).strip("\n")


def markdown_renderer() -> MarkdownIt:
    """CommonMark with tables, for questions and written answers. Student text is hostile: raw HTML is
    shown as text (``html=False``), images are not loaded (a remote image would tell a third party who
    opened the page), and markdown-it's own link check refuses ``javascript:`` and the like."""
    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")


def environment() -> Environment:
    md = markdown_renderer()
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["num"] = lambda x: f"{x:g}"
    env.filters["clip"] = lambda s: s if len(s) <= MAX_SHOWN_CHARS else s[:MAX_SHOWN_CHARS] + "\n[... cut]"
    env.filters["date"] = lambda t: datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
    env.filters["unmarked"] = without_markers
    env.filters["markdown"] = lambda text: Markup(md.render(text))   # noqa: S704 - markdown-it escapes: html=False
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


def _shown_cells(cells) -> list[dict]:
    """The feedback run's cells as the student sees them: the grader's own frames left out."""
    return [{"label": c["label"], "status": c["status"], "output": hide_grader_frames(c["output"]),
             "error": hide_grader_frames(c["error"])} for c in cells]


def render_attempt(book: Gradebook, row, out_dir: Path, env: Environment | None = None, *,
                   path: Path | None = None, index_href: str = "../index.html", index_label: str = "class index"
                   ) -> Path:
    """Write the page of one attempt: ``OUT/feedback/STUDENT/NAME.html``, or ``path`` (the hand-back,
    whose pages link to the student's own index instead of the class's)."""
    env = env or environment()
    manual, reviewed = book.manual_score(row["key"])
    clearance = book.clearance(row["key"])
    page = env.get_template("attempt.html.j2").render(
        index_href=index_href, index_label=index_label,
        a=row, attempt_id=row["key"][:16], manual=manual, reviewed=reviewed,
        total=row["auto_score"] + manual, possible=row["auto_possible"] + row["manual_possible"],
        flags=json.loads(row["flags"]), notices=json.loads(row["notices"]), notes=json.loads(row["notes"]),
        ignored=json.loads(row["ignored"]) if "ignored" in row.keys() else [],
        tests=book.tests(row["key"]), cells=_shown_cells(book.cells(row["key"])), answers=book.answers(row["key"]),
        clearance=clearance)
    return _write(path or page_path(out_dir, row["student"], page_name(row)), page)


def render_index(book: Gradebook, out_dir: Path, rows, title: str, env: Environment | None = None) -> Path:
    env = env or environment()
    students: dict[str, list] = {}
    for r in rows:
        manual, reviewed = book.manual_score(r["key"])
        students.setdefault(r["student"], []).append(
            {"row": r, "href": f"{r['student']}/{page_name(r)}.html", "manual": manual,
             "pending": bool(r["manual_possible"]) and not reviewed})
    text = env.get_template("index.html.j2").render(title=title, students=students)
    root = (Path(out_dir) / "feedback").resolve()
    return _write(root / "index.html", text)


def render_all(book: Gradebook, out_dir: Path, exercise: str | None = None, students: set[str] | None = None,
               title: str = "Grades") -> list[Path]:
    """Every counted attempt's page (optionally one exercise / some students: the ones a run graded), plus the
    class index, which always lists the whole class: a run over one exercise never shrinks it."""
    env = environment()
    rows = [r for r in book.current(exercise, students) if STUDENT_ID.match(r["student"])]
    pages = [render_attempt(book, r, out_dir, env) for r in rows]
    pages.append(render_index(book, out_dir, book.current(), title, env))
    return pages
