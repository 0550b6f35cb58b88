"""``course grade``: grade a folder of submissions, or import a filled-in review sheet.

  course grade SUBMISSIONS_DIR [--exercise exNN] [--jobs N] [--gradebook PATH] [--out DIR]
  course grade --import-review SHEET.csv [--gradebook PATH] [--out DIR]

Exit status: 0 when the grader worked, whatever the students scored; 1 for a
grader fault (unreadable solutions, a crash of the grader itself); 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..paths import BUILD, SOLUTIONS
from .export import export_grades, export_review, import_review
from .feedback import render_all
from .gradebook import Gradebook
from .grade import Settings, grade_all, instructor_paths
from .load import discover
from .run import Limits
from .source import load_sources


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="course grade", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("submissions", nargs="?", type=Path, help="STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb files")
    p.add_argument("--exercise", help="grade only this exercise (exNN)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel kernels (default: number of cores)")
    p.add_argument("--gradebook", type=Path, default=BUILD / "gradebook.sqlite")
    p.add_argument("--out", type=Path, default=BUILD / "grading", help="feedback pages, grades.csv, review.csv")
    p.add_argument("--solutions", type=Path, default=SOLUTIONS, help="the instructor's source notebooks")
    p.add_argument("--import-review", type=Path, metavar="SHEET", help="import scores and comments from a review sheet")
    p.add_argument("--cell-timeout", type=float, default=Limits.cell_timeout)
    p.add_argument("--timeout", type=float, default=Limits.submission_timeout, help="per-submission time limit, seconds")
    p.add_argument("--memory-gb", type=float, default=Limits.memory_bytes / 2**30)
    p.add_argument("--no-progress", action="store_true")
    return p


def hidden_paths(args) -> list[Path]:
    """Directories a grading kernel must not see: the hidden tests, the gradebook, other students' work."""
    extra = [args.gradebook.parent, args.out] + ([args.submissions] if args.submissions else [])
    return instructor_paths(args.solutions, *extra)


def summary_table(book: Gradebook, exercise: str | None) -> None:
    rows = book.current(exercise)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text is enough
        for r in rows:
            print(f"{r['student']:16} {r['exercise_name']:28} {r['status']:9} {r['auto_score']:g}/{r['auto_possible']:g}  {r['reason'][:80]}")
        return
    table = Table(title="Grades (newest attempt per student and exercise)")
    for col in ("student", "exercise", "status", "tests", "review", "reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        manual, reviewed = book.manual_score(r["key"])
        review = "-" if not r["manual_possible"] else (f"{manual:g}/{r['manual_possible']:g}" if reviewed else "pending")
        style = {"graded": "", "flagged": "bold red", "rejected": "yellow"}[r["status"]]
        table.add_row(r["student"], r["exercise_name"], r["status"], f"{r['auto_score']:g}/{r['auto_possible']:g}",
                      review, r["reason"][:120], style=style)
    Console(width=160).print(table)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.submissions and not args.import_review:
        parser().print_usage()
        print("course grade: give SUBMISSIONS_DIR or --import-review SHEET", file=sys.stderr)
        return 2
    try:
        sources = load_sources(args.solutions)
    except (OSError, ValueError) as exc:
        print(f"grader fault: cannot read the solutions: {exc}", file=sys.stderr)
        return 1
    if not sources:
        print(f"grader fault: no exNN_*.ipynb in {args.solutions}", file=sys.stderr)
        return 1
    book = Gradebook(args.gradebook)
    try:
        if args.import_review:
            applied, problems = import_review(book, args.import_review)
            for p in problems:
                print(f"  {p}")
            pages = render_all(book, args.out)
            print(f"review: {applied} answers scored, {len(problems)} rows skipped; {len(pages)} feedback pages re-rendered")
            return 0
        if not args.submissions.is_dir():
            print(f"course grade: {args.submissions} is not a folder", file=sys.stderr)
            return 2
        found = discover(args.submissions)
        if args.exercise:
            found = [f for f in found if f.exercise == args.exercise]
        limits = Limits(cell_timeout=args.cell_timeout, submission_timeout=args.timeout, memory_bytes=int(args.memory_gb * 2**30))
        settings = Settings(limits=limits, hide=hidden_paths(args))
        report = grade_all(found, sources, book, settings, args.jobs, progress=not args.no_progress)
        render_all(book, args.out, args.exercise)
        grades = export_grades(book, args.out / "grades.csv", args.exercise)
        review = export_review(book, args.out / "review.csv", args.exercise)
        summary_table(book, args.exercise)
        print(f"graded {len(report.graded)}, unchanged (skipped) {report.skipped}, grader faults {len(report.faults)}")
        print(f"gradebook: {args.gradebook}\ngrades:    {grades}\nreview:    {review}\nfeedback:  {args.out / 'feedback'}")
        for fault in report.faults:
            print(f"GRADER FAULT {fault}", file=sys.stderr)
        return 1 if report.faults else 0
    finally:
        book.close()
