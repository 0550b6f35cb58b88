"""Handing results back: ``course grade hand-back OUT --to DIR``.

Everything in ``OUT`` is root-only (0700/0600): the gradebook, every student's pages, the class
index. The hand-back writes, from the gradebook (reviews and cleared flags included):

* ``DIR/STUDENT/`` for each student: ``index.html`` (their exercises, scores and total) and one
  page per exercise, the same page as ``OUT/feedback`` but linking to their own index, never to the
  class index or to another student. The pages are self-contained (inline style, no script, no link
  outside the folder). Folders 0755 and files 0644, so a copy (``cp -r``, ``rsync``, an upload) stays
  readable by whoever receives it. ``DIR`` itself is 0700: hand each student their own folder, not
  ``DIR``. ``--zip`` adds ``DIR/STUDENT.zip`` (0644) of the same files.
* ``OUT/lms/`` (root-only, like the rest of ``OUT``): ``grades.csv``, one row per student with the
  points of each exercise, ``total`` and ``possible``; ``canvas.csv``, a Canvas gradebook import
  (``Student, ID, SIS User ID, SIS Login ID, Section``, a ``Points Possible`` row, one column per
  exercise); ``moodle.csv``, a Moodle grade import (``lms_id`` to map to a user field, one column per
  exercise).

Student ids are the course's. ``--lms-ids MAP.csv`` (columns ``student,lms_id`` and optionally
``name``, ``section``, ``canvas_id``, ``sis_user_id``) says who each one is in the LMS; without it, or
for a student it does not list, the course id is used.

``DIR`` must be empty, missing, or a folder an earlier hand-back wrote (it holds the marker
``.course-hand-back``): a student's folder there is replaced, nothing else is touched.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from course_grader.errors import HandBackError
from course_grader.intake.discover import STUDENT_ID

from .export import header_key, write_csv
from .feedback import environment, page_name, render_attempt
from .gradebook import Gradebook
from .private import private_dir

MARKER = ".course-hand-back"
SHARED_DIR, SHARED_FILE = 0o755, 0o644
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


@dataclass
class HandBack:
    folders: list[Path] = field(default_factory=list)
    zips: list[Path] = field(default_factory=list)
    lms: list[Path] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)     # "student exercise": written answers not reviewed
    flagged: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)    # students the --lms-ids file does not list


MAP_COLUMNS = ["student", "lms_id", "name", "section", "canvas_id", "sis_user_id"]


def read_map(path: Path) -> dict[str, dict[str, str]]:
    """``{course id: {"lms_id": ..., "name": ..., ...}}`` from a ``student,lms_id[,name,...]`` CSV."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise HandBackError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise HandBackError(f"{path} is not UTF-8 text (save it as CSV UTF-8)") from None
    first = text.splitlines()[0] if text.strip() else ""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=max((",", ";", "\t"), key=first.count))
    header = [header_key(h) for h in next(reader, [])]
    if "student" not in header or "lms_id" not in header:
        raise HandBackError(f"{path}: the header must name student and lms_id (optional: "
                            f"{', '.join(MAP_COLUMNS[2:])}); it has {', '.join(header) or 'nothing'}")
    mapping: dict[str, dict[str, str]] = {}
    for n, cells in enumerate(reader, start=2):
        row = {c: (cells[i].strip() if i < len(cells) else "") for i, c in enumerate(header) if c in MAP_COLUMNS}
        if not any(row.values()):
            continue
        if row["student"] in mapping:
            raise HandBackError(f"{path} line {n}: {row['student']!r} is listed twice")
        mapping[row["student"]] = row
    return mapping


def _check_target(to: Path) -> None:
    if to.is_symlink() or (to.exists() and not to.is_dir()):
        raise HandBackError(f"{to} is not a folder")
    if to.is_dir() and any(to.iterdir()) and not (to / MARKER).is_file():
        raise HandBackError(f"{to} is not empty and was not written by course grade hand-back; "
                            "give an empty or new folder")


def _replace_folder(to: Path, student: str) -> Path:
    staged = to / f".{student}.new"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(mode=SHARED_DIR)
    os.chmod(staged, SHARED_DIR)
    return staged


def _publish(staged: Path, final: Path) -> None:
    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists() or final.is_symlink():
        os.rename(final, old)
    os.rename(staged, final)
    shutil.rmtree(old, ignore_errors=True)


def hand_back(book: Gradebook, out_dir: Path, to: Path, *, zip_pages: bool = False,
              lms_ids: Path | None = None, title: str = "Feedback") -> HandBack:
    to, out_dir = Path(to), Path(out_dir)
    _check_target(to)
    mapping = read_map(lms_ids) if lms_ids else {}
    result = HandBack()
    rows = [r for r in book.current() if STUDENT_ID.fullmatch(r["student"])]
    by_student: dict[str, list] = {}
    for r in rows:
        by_student.setdefault(r["student"], []).append(r)
    if not to.exists():
        to.mkdir(parents=True, mode=0o700)
    os.chmod(to, 0o700)
    (to / MARKER).write_text("written by course grade hand-back; each STUDENT/ folder is that student's\n")
    env = environment()
    for student, items in sorted(by_student.items()):
        staged = _replace_folder(to, student)
        listed = []
        for r in items:
            name = page_name(r)
            render_attempt(book, r, out_dir, env, path=staged / f"{name}.html", index_href="index.html",
                           index_label="all your exercises")
            manual, reviewed = book.manual_score(r["key"])
            if not reviewed:
                result.pending.append(f"{student} {r['exercise_name'] or r['exercise']}")
            if r["status"] == "flagged":
                result.flagged.append(f"{student} {r['exercise_name'] or r['exercise']}")
            listed.append({"row": r, "href": f"{name}.html", "pending": not reviewed,
                           "total": r["auto_score"] + manual, "possible": r["auto_possible"] + r["manual_possible"]})
        page = env.get_template("student.html.j2").render(
            student=student, title=title, items=listed, total=sum(x["total"] for x in listed),
            possible=sum(x["possible"] for x in listed))
        (staged / "index.html").write_text(page, encoding="utf-8")
        for path in staged.iterdir():
            os.chmod(path, SHARED_FILE)
        _publish(staged, to / student)
        result.folders.append(to / student)
        if zip_pages:
            result.zips.append(_zip(to / student))
    result.lms = write_lms(book, out_dir / "lms", mapping, result)
    return result


def _zip(folder: Path) -> Path:
    target = folder.with_suffix(".zip")
    tmp = folder.with_name(f".{folder.name}.zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, f"{folder.name}/{path.name}")
    os.chmod(tmp, SHARED_FILE)
    tmp.replace(target)
    return target


def _num(x: float) -> str:
    return f"{x:g}"


def write_lms(book: Gradebook, lms_dir: Path, mapping: dict[str, dict[str, str]], result: HandBack) -> list[Path]:
    """``grades.csv`` (per student, with ``total``), ``canvas.csv`` and ``moodle.csv`` in ``lms_dir`` (private)."""
    private_dir(lms_dir)
    rows = [r for r in book.current() if STUDENT_ID.fullmatch(r["student"])]
    exercises: dict[str, float] = {}   # name -> points possible
    points: dict[str, dict[str, float]] = {}
    for r in sorted(rows, key=lambda r: r["exercise"]):
        name = r["exercise_name"] or r["exercise"]
        if r["exercise_name"]:
            exercises.setdefault(name, r["auto_possible"] + r["manual_possible"])
        points.setdefault(r["student"], {})[name] = r["auto_score"] + book.manual_score(r["key"])[0]
    names = sorted(exercises)
    students = sorted(points)
    result.unmapped = [s for s in students if mapping and s not in mapping]

    def who(student: str, key: str, default: str = "") -> str:
        return (mapping.get(student) or {}).get(key, "") or default

    grades = [[s, who(s, "lms_id", s), *(_num(points[s][n]) if n in points[s] else "" for n in names),
               _num(sum(points[s].get(n, 0.0) for n in names)), _num(sum(exercises.values()))] for s in students]
    paths = [write_csv(lms_dir / "grades.csv", ["student", "lms_id", *names, "total", "possible"], grades)]
    canvas = [["Points Possible", "", "", "", "", *(_num(exercises[n]) for n in names)]]
    canvas += [[who(s, "name", s), who(s, "canvas_id"), who(s, "sis_user_id"), who(s, "lms_id", s), who(s, "section"),
                *(_num(points[s][n]) if n in points[s] else "" for n in names)] for s in students]
    paths.append(write_csv(lms_dir / "canvas.csv", CANVAS_FIXED + names, canvas))
    moodle = [[who(s, "lms_id", s), s, *(_num(points[s][n]) if n in points[s] else "" for n in names)]
              for s in students]
    paths.append(write_csv(lms_dir / "moodle.csv", ["lms_id", "student", *names], moodle))
    return paths


