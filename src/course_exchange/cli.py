"""The exchange's ``course`` commands (in a terminal of your Lab on the class's hub).

Students:
  course submit FILE [--course C]          hand FILE in through the exchange (no --student: the hub
                                           knows who you are); on a hub this is the only way: a
                                           --student other than yours, --out, or an exchange that
                                           cannot be reached hands nothing in and says why
  course handins [--course C]              your hand-ins: time, sha256, late, which one counts
  course feedback [COURSE] [--to DIR]      your returned feedback into DIR (default ~/feedback/COURSE/,
                                           which Lab's file browser shows: open index.html there)
Instructors (members of the hub group course-C-instructors):
  course deadlines COURSE [exNN=TIME ...]  show or set deadlines (ISO 8601 with a zone; exNN=none removes)
  course collect COURSE --to DIR           the hand-ins that count, as STUDENT__exNN_slug.ipynb files that
                                           `course grade run DIR` reads as they are
  course return [COURSE] HANDBACK_DIR [--grades CSV]
                                           each student's folder of `course grade hand-back OUT --to
                                           HANDBACK_DIR` and their score (OUT/lms/grades.csv) to the exchange
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shlex
import sys
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

from course_grader import api

from .client import Exchange
from .errors import ExchangeError

COLLECT_MANIFEST = api.COLLECT_RECORD   # a name `course grade run DIR` knows, so it reports no problem for it


def _parser(prog: str, help_text: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"course {prog}", description=help_text, allow_abbrev=False,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def _fail(prog: str, exc: Exception, code: int = 1) -> int:
    print(f"course {prog}: {exc}", file=sys.stderr)
    return code


def _write_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _row(h: dict) -> str:
    flags = ("counts" if h["counts"] else "kept") + (", LATE" if h["late"] else "")
    return f"  #{h['id']:<6} {h['exercise_name']:<28} {h['received']}  sha256 {h['sha256'][:12]}  {flags}"


def submit_main(argv: list[str] | None = None) -> int:
    p = _parser("submit", "Hand in a notebook through the class's exchange (inside a hub session; the hub "
                          "says who you are). Outside a hub: course submit FILE --student ID.")
    p.add_argument("file", type=Path, help="your notebook, e.g. exercises/ex02_diagnose.ipynb")
    p.add_argument("--course", help="the course id (default: your only course on this hub)")
    p.add_argument("--student", help="not needed on the hub, which knows who you are; if given, it must be your "
                                     "hub user name")
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)   # the single-machine form's; refused here
    args = p.parse_args(argv)
    if args.out is not None:
        return _fail("submit", f"nothing was handed in: on the class's hub a hand-in goes to the exchange, where your "
                               f"instructor collects it, and --out {args.out} would write a file nobody collects. "
                               f"Run: course submit {shlex.quote(str(args.file))}", 2)
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        return _fail("submit", f"{args.file}: {exc.strerror}", 2)
    try:
        ex = Exchange.from_env()
        if args.student is not None and args.student != (me := ex.me()["user"]):
            return _fail("submit", f"nothing was handed in: on the class's hub you hand in as your hub user, {me}, "
                                   f"not {args.student}. Run: course submit {shlex.quote(str(args.file))}", 2)
        course = ex.course(args.course)
        saved = datetime.fromtimestamp(args.file.stat().st_mtime).astimezone()
        print(f"handing in {args.file} as saved on disk at {_when(saved)} to course {course} "
              "(anything typed in Lab since the last save is not handed in)")
        reply = ex.hand_in(course, args.file, data)
    except ExchangeError as exc:   # said as the exchange said it, and never "handed in"
        why = f"nothing was handed in: {exc}"
        if exc.status == 422:
            return _fail("submit", why)
        return _fail("submit", why, 2 if exc.status in (0, 400, 401, 403, 404) else 1)
    h = reply["handin"]
    for w in reply["warnings"]:
        print(f"warning: {w}")
    if reply["warnings"]:
        print(f"warning: handed in all the same; run `course check {args.file}` to see the public tests")
    print(f"handed in: #{h['id']} {h['exercise_name']} at {_when(datetime.fromisoformat(h['received']))} "
          f"(sha256 {h['sha256'][:12]})")
    deadline = reply.get("deadline")
    if h["late"]:
        print(f"LATE: after this exercise's deadline ({_when(datetime.fromisoformat(deadline))}); it is kept and "
              "marked late. Your latest hand-in before the deadline is the one graded, if you made one")
    elif deadline:
        print(f"this one counts: your latest hand-in before the deadline ({_when(datetime.fromisoformat(deadline))}) "
              "is the one graded; you may hand in again until then")
    else:
        print("this one counts: your latest hand-in is the one graded; you may hand in again")
    print("`course handins` lists yours; once your instructor returns feedback, `course feedback` brings it here")
    return 0


def _when(t: datetime) -> str:
    """A time as a person reads it, in this machine's zone, which it names (2026-12-03 09:14:23 UTC)."""
    return t.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def handins_main(argv: list[str] | None = None) -> int:
    p = _parser("handins", "Your hand-ins in the exchange: which one counts, which came late.")
    p.add_argument("--course")
    args = p.parse_args(argv)
    try:
        ex = Exchange.from_env()
        course = ex.course(args.course)
        mine = ex.my_handins(course)
    except ExchangeError as exc:
        return _fail("handins", exc, 2)
    print(f"course {course}: {len(mine['handins'])} hand-in(s); deadlines: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(mine['deadlines'].items())) or 'none'}")
    for h in mine["handins"]:
        print(_row(h))
    return 0


def feedback_folder(course: str) -> Path:
    """Where ``course feedback`` puts a course's pages by default (and where Lab's Exercises panel opens them):
    ``$COURSE_WORKSPACE/feedback/COURSE``, or ``~/feedback/COURSE``."""
    base = Path(os.environ["COURSE_WORKSPACE"]) if os.environ.get("COURSE_WORKSPACE") else Path.home()
    return base / "feedback" / course


def feedback_main(argv: list[str] | None = None) -> int:
    p = _parser("feedback", "Fetch your returned feedback pages into a folder Lab shows.")
    p.add_argument("course", nargs="?")
    p.add_argument("--to", type=Path, help="folder (default: ~/feedback/COURSE, or $COURSE_WORKSPACE/feedback/COURSE)")
    args = p.parse_args(argv)
    try:
        ex = Exchange.from_env()
        course = ex.course(args.course)
        fb = ex.my_feedback(course)
        if fb is None:
            print(f"course {course}: no feedback returned to you yet")
            return 0
        to = args.to or feedback_folder(course)
        to.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(to, 0o700)
        for page in fb["pages"]:
            _write_private(to / page, ex.my_feedback_page(course, page))
    except ExchangeError as exc:
        return _fail("feedback", exc, 2)
    except OSError as exc:
        return _fail("feedback", exc, 2)
    score = fb["score"]
    print(f"course {course}: feedback returned {fb['returned']}: "
          f"{score.get('total', '?')} / {score.get('possible', '?')} points")
    print(f"wrote {len(fb['pages'])} page(s) to {to}/ ; open {to / 'index.html'} in Lab's file browser")
    # a path of the hub's own address: the exchange's URL in a server is often the service's own port,
    # which a student's browser does not reach (the hub trial printed :8003 where the hub is :8000)
    print(f"or in a browser, at this path of the hub's address: {urlparse(ex.url).path}courses/{course}/feedback/")
    return 0


def deadlines_main(argv: list[str] | None = None) -> int:
    p = _parser("deadlines", "Show or set a course's deadlines (instructors set them).")
    p.add_argument("course")
    p.add_argument("set", nargs="*", metavar="exNN=TIME", help="e.g. ex02=2026-12-10T17:00+00:00, or ex02=none")
    args = p.parse_args(argv)
    try:
        wanted: dict[str, str | None] = {}
        for item in args.set:
            eid, sep, when = item.partition("=")
            if not sep:
                raise ExchangeError(f"{item!r}: write exNN=TIME (ISO 8601 with a zone) or exNN=none")
            wanted[eid] = None if when.lower() == "none" else when
        ex = Exchange.from_env()
        got = ex.set_deadlines(args.course, wanted) if wanted else ex.deadlines(args.course)
    except ExchangeError as exc:
        return _fail("deadlines", exc, 2)
    for eid, when in sorted(got.items()):
        print(f"{eid}  {when}")
    if not got:
        print(f"course {args.course}: no deadlines (every latest hand-in counts)")
    return 0


def collect_main(argv: list[str] | None = None) -> int:
    p = _parser("collect", "Fetch the hand-ins that count into a folder `course grade run DIR` reads as it is.")
    p.add_argument("course")
    p.add_argument("--to", type=Path, required=True, metavar="DIR")
    args = p.parse_args(argv)
    try:
        ex = Exchange.from_env()
        listing = ex.collect(args.course)
        args.to.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(args.to, 0o700)
        manifest = []
        for h in listing["counted"]:
            name = api.handin_name(h["student"], h["exercise_name"])
            data = ex.handin_file(args.course, h["id"])
            if hashlib.sha256(data).hexdigest() != h["sha256"]:
                raise ExchangeError(f"hand-in #{h['id']} of {h['student']} arrived damaged (sha256 differs); "
                                    "run course collect again")
            _write_private(args.to / name, data)
            manifest.append({**{k: h[k] for k in ("id", "student", "exercise", "received", "sha256", "late")},
                             "file": name})
        _write_private(args.to / COLLECT_MANIFEST, json.dumps(manifest, indent=1).encode())
    except (ExchangeError, api.HandinError, OSError) as exc:
        return _fail("collect", exc, 2)
    late = [m for m in manifest if m["late"]]
    print(f"collected {len(manifest)} hand-in(s) of course {args.course} into {args.to} "
          f"({listing['all']} stored; {len(late)} counted ones came late)")
    for m in late:
        print(f"  late: {m['file']} received {m['received']}")
    print(f"record: {args.to / COLLECT_MANIFEST} (id, time, sha256, late of each; hidden from course grade)")
    graded = args.to.parent / (args.to.name + "-graded")
    print(f"next: course grade run {shlex.quote(str(args.to))} --out {shlex.quote(str(graded))}")
    return 0


def _scores(grades: Path) -> dict[str, dict]:
    """``{student: {"total", "possible", "exercises": {name: points}}}`` from a hand-back's grades.csv."""
    with open(grades, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for r in rows:
        fixed = {"student", "lms_id", "total", "possible"}
        out[r["student"]] = {"total": float(r["total"]), "possible": float(r["possible"]),
                             "exercises": {k: float(v) for k, v in r.items() if k not in fixed and v not in ("", None)}}
    return out


def return_main(argv: list[str] | None = None) -> int:
    p = _parser("return", "Return each student's own feedback pages and score through the exchange.")
    p.add_argument("course", nargs="?", help="the course id (default: the only course you teach on this hub)")
    p.add_argument("handback", type=Path, metavar="HANDBACK_DIR", help="the --to folder of course grade hand-back")
    p.add_argument("--grades", type=Path, help="grades.csv of that hand-back (default: OUT/lms/grades.csv when "
                                               "HANDBACK_DIR is OUT-hand-back)")
    args = p.parse_args(argv)
    grades = args.grades
    if grades is None and args.handback.name.endswith("-hand-back"):
        grades = args.handback.with_name(args.handback.name.removesuffix("-hand-back")) / "lms" / "grades.csv"
    try:
        folders = api.hand_back_folders(args.handback)
        if grades is None or not grades.is_file():
            raise ExchangeError(f"no grades file {grades or ''}: give --grades OUT/lms/grades.csv (written by the "
                                "same course grade hand-back)")
        scores = _scores(grades)
        ex = Exchange.from_env()
        args.course = ex.course(args.course, instructor=True, how="the course id before HANDBACK_DIR")
        returned = 0
        for student, folder in sorted(folders.items()):
            pages = {f.name: f.read_text(encoding="utf-8") for f in sorted(folder.iterdir())
                     if f.is_file() and not f.is_symlink() and f.suffix == ".html"}
            if student not in scores:
                print(f"warning: {student}: not in {grades}; returned without a score")
            ex.give_back(args.course, student, scores.get(student, {}), pages)
            returned += 1
    except (ExchangeError, api.HandinError, OSError, KeyError, ValueError) as exc:
        return _fail("return", exc, 2)
    print(f"returned feedback to {returned} student(s) of course {args.course}; each sees it with "
          "`course feedback` in their Lab terminal")
    return 0


COMMANDS = {"submit": submit_main, "handins": handins_main, "feedback": feedback_main, "deadlines": deadlines_main,
            "collect": collect_main, "return": return_main}
