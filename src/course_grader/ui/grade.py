"""``course grade``: grade a folder of submissions, import a review sheet, clear a flag, or hand back.

  course grade run DIR [--exercise exNN] [--jobs N] [--out OUT] [--gradebook PATH]
               [--scheduler ADDRESS | --cluster local:N]
  course grade import-review SHEET.csv --out OUT [--gradebook PATH]
  course grade clear-flag ATTEMPT --reason "..." --out OUT [--gradebook PATH]
  course grade hand-back OUT [--to DIR] [--zip] [--lms-ids MAP.csv]

The earlier forms still work, for one release: ``course grade DIR``, ``--import-review SHEET``,
``--clear-flag ATTEMPT`` and ``--hand-back OUT``. (A folder named like a subcommand is graded with
``course grade run run`` or ``course grade ./run``.)

Results of DIR go to OUT (default build/grading/<name of DIR>/): gradebook.sqlite,
grades.csv, review.csv and feedback/ (one page per student and exercise, and
index.html). Exit status: 0 when the grader worked, whatever the students scored;
1 for a grader fault (unreadable solutions, a model answer that fails its own tests,
a crash of the grader); 2 for usage errors, and when nothing in DIR could be graded (no file names a
student). OUT and the gradebook are never read as hand-ins, also when they lie inside DIR.

--hand-back writes one folder per student with only their own pages (DIR/STUDENT/, readable once
copied to them; DIR defaults to OUT-hand-back beside OUT) and, in OUT/lms/, grades.csv (one row per
student, with total), canvas.csv and moodle.csv gradebook imports (docs/grading.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from pathlib import Path

from compile_course.paths import SOLUTIONS
from course_grader.intake.discover import HAND_IN_NAMES
from course_grader.results.shown import printable


def say(text: str, file=None) -> None:
    """Print one line that may quote untrusted names (file names, student ids, reasons): escaped by
    ``shown.printable``, so no name can start a line of its own or drive the terminal."""
    print(printable(text), file=file or sys.stdout)


def say_unread(report, file=None) -> None:
    """The files of DIR that were not graded: without a student, or not hand-ins at all."""
    for line in report.unattributed:
        say(f"not graded (no student): {line}", file=file)
    for line in report.problems:
        say(f"problem: {line}", file=file)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="course grade", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("submissions", nargs="?", type=Path,
                   help="STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb files")
    p.add_argument("--exercise", help="grade only this exercise: its id (ex02) or its name (ex02_diagnose)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="submissions graded at once (default 2)")
    p.add_argument("--out", type=Path, help="results folder (default: build/grading/<name of DIR>)")
    p.add_argument("--gradebook", type=Path, help="SQLite gradebook (default: OUT/gradebook.sqlite)")
    p.add_argument("--solutions", type=Path, default=SOLUTIONS, help="the instructor's source notebooks")
    p.add_argument("--import-review", type=Path, metavar="SHEET", help="import scores and comments from a review sheet")
    p.add_argument("--clear-flag", metavar="ATTEMPT",
                   help="clear the flags of this attempt (its id, or a prefix of it)")
    p.add_argument("--reason", help="why the flag is cleared (recorded in the gradebook; required with --clear-flag)")
    p.add_argument("--hand-back", type=Path, metavar="OUT",
                   help="write each student's own feedback folder, and LMS grade files, from the results in OUT")
    p.add_argument("--to", type=Path, metavar="DIR", help="with --hand-back: the folder of the students' folders "
                   "(default: OUT-hand-back beside OUT)")
    p.add_argument("--zip", action="store_true", help="with --hand-back: also a STUDENT.zip per student")
    p.add_argument("--lms-ids", type=Path, metavar="MAP.csv",
                   help="with --hand-back: student,lms_id[,name,section,canvas_id,sis_user_id] per student")
    p.add_argument("--cpu-per-cell", type=int,
                   help="CPU seconds per cell or measuring request (default: the sandbox's)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--unconfined", action="store_true",
                   help="grade without root, in a weaker sandbox (students' code runs as you: see docs/sandbox.md)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on the workers of this Dask scheduler (tcp://host:8786); see docs/grading.md")
    where.add_argument("--cluster", metavar="local:N",
                       help="start a Dask LocalCluster of N worker processes here for this run")
    return p


def summary_table(rows, book) -> None:
    from rich.table import Table
    from rich.text import Text

    from .terminal import console

    table = Table(title="Grades (the attempt that counts per student and exercise)")
    for col in ("student", "exercise", "status", "tests", "review", "attempt", "reason"):
        table.add_column(col, overflow="fold")
    styles = {"graded": "", "flagged": "bold red", "rejected": "yellow", "fault": "bold red"}
    for r in rows:
        manual, reviewed = book.manual_score(r["key"])
        if not r["manual_possible"]:
            review = "-"
        else:
            review = f"{manual:g}/{r['manual_possible']:g}" if reviewed else "pending"
        cells = (r["student"], r["exercise_name"] or r["exercise"], r["status"],
                 f"{r['auto_score']:g}/{r['auto_possible']:g}", review, r["key"][:16], r["reason"][:120])
        # Text, not str: rich would read "[...]" in a file name as markup
        table.add_row(*(Text(printable(c)) for c in cells), style=styles.get(r["status"], ""))
    console().print(table)  # the terminal's own width; in a log or a pipe, each row on one line


def _nothing_to_grade(folder: Path, exercise: str | None) -> str:
    """Why ``folder`` holds nothing to grade (for ``exercise``, if given), or "" when it holds something:
    checked before any result folder is made, so a mistyped folder is a usage error, not an empty class."""
    from ..intake.discover import EXERCISE_PREFIX, discover

    found, _ = discover(folder)
    looked_for = HAND_IN_NAMES
    if not found:
        return f"no submissions in {folder}: looked for {looked_for} files there and found none"
    wanted = (match.group(1) if (match := EXERCISE_PREFIX.match(exercise or "")) else None)
    if wanted and not any(c.exercise == wanted for c in found):
        return (f"no submissions of {wanted} in {folder}: looked for {looked_for.replace('exNN', wanted)} "
                f"and found only other exercises' ({len(found)} files)")
    return ""


def _out_dir(args) -> Path | None:
    if args.out:
        return args.out
    if args.submissions:
        from course_grader.pipeline.grade_class import default_out_dir
        from course_grader.results.private import grading_root

        if why := grading_root()[1]:
            print(f"course grade: {why}")
        return default_out_dir(args.submissions)
    return None


# subcommand -> the option it stands for (None: the submissions folder, given as it is)
SUBCOMMANDS = {"run": None, "import-review": "--import-review", "clear-flag": "--clear-flag",
               "hand-back": "--hand-back"}


def flag_form(argv: list[str]) -> list[str]:
    """``argv`` with a leading subcommand written as the option it stands for (the parser reads both forms).

    ``clear-flag ATTEMPT ...`` becomes ``--clear-flag ATTEMPT ...``; ``run DIR ...`` becomes ``DIR ...``.
    Raises ``ValueError`` when a subcommand lacks its argument."""
    if not argv or argv[0] not in SUBCOMMANDS:
        return list(argv)
    name, rest = argv[0], list(argv[1:])
    if not rest or rest[0].startswith("-"):
        what = {"run": "DIR", "import-review": "SHEET", "clear-flag": "ATTEMPT", "hand-back": "OUT"}[name]
        raise ValueError(f"course grade {name} needs {what} first")
    option = SUBCOMMANDS[name]
    return rest if option is None else [option, *rest]


def main(argv: list[str] | None = None) -> int:
    try:
        argv = flag_form(list(sys.argv[1:] if argv is None else argv))
    except ValueError as exc:
        print(f"course grade: {exc}", file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    actions = sum(x is not None for x in (args.submissions, args.import_review, args.clear_flag, args.hand_back))
    if actions != 1:
        parser().print_usage(sys.stderr)
        print("course grade: give exactly one of run DIR, import-review SHEET, clear-flag ATTEMPT, hand-back OUT",
              file=sys.stderr)
        return 2
    if args.hand_back is None and (args.to or args.zip or args.lms_ids):
        print("course grade: --to, --zip and --lms-ids go with --hand-back OUT", file=sys.stderr)
        return 2
    if args.hand_back is not None:
        return _hand_back(args)
    out = _out_dir(args)
    if out is None:
        print("course grade: --out OUT is needed to find the gradebook", file=sys.stderr)
        return 2
    gradebook = args.gradebook or out / "gradebook.sqlite"
    if args.import_review or args.clear_flag:
        return _instructor_action(args, out, gradebook)
    if not args.submissions.is_dir() or args.submissions.is_symlink():
        say(f"course grade: {args.submissions} is not a folder", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("course grade: --jobs must be at least 1", file=sys.stderr)
        return 2
    if args.cluster is not None:
        n = args.cluster.removeprefix("local:")
        if not args.cluster.startswith("local:") or not n.isdigit() or int(n) < 1:
            print(f"course grade: --cluster takes local:N (N workers), not {args.cluster!r}", file=sys.stderr)
            return 2
    if why := _nothing_to_grade(args.submissions, args.exercise):
        say(f"course grade: {why}; nothing was graded and nothing was created", file=sys.stderr)
        return 2

    from course_grader.config import GradeOptions
    from course_grader.errors import GraderError, UsageError
    from course_grader.pipeline.grade_class import grade_class
    from course_grader.results.gradebook import Gradebook

    limits = None
    if args.cpu_per_cell:
        from course_grader.sandbox import Limits

        limits = Limits.scaled(args.cpu_per_cell)
    try:
        with ExitStack() as stack:
            executor = None
            if args.scheduler or args.cluster:   # only then is Dask imported
                from course_grader.pipeline.cluster import DaskExecutor, local_cluster

                address = args.scheduler or stack.enter_context(local_cluster(int(args.cluster[len("local:"):])))
                executor = DaskExecutor(address)
            options = GradeOptions(gradebook=gradebook, solutions=args.solutions, exercise=args.exercise,
                                   jobs=args.jobs, limits=limits, progress=not args.no_progress, executor=executor,
                                   unconfined=args.unconfined)
            report = grade_class(args.submissions, out, options)
    except UsageError as exc:
        say(f"course grade: {exc}", file=sys.stderr)
        return 2
    except GraderError as exc:
        say(f"grader fault: {exc}", file=sys.stderr)
        return 1
    if not (report.graded or report.skipped or report.faults):
        say_unread(report, sys.stderr)
        say(f"course grade: nothing in {args.submissions} could be graded: hand-ins are "
            f"{HAND_IN_NAMES} (course collect writes them so)", file=sys.stderr)
        return 2
    with Gradebook(report.gradebook) as book:
        students = {a.student for a in report.graded} | {r["student"] for r in book.current(report.exercise)}
        rows = [r for r in book.current(report.exercise) if r["student"] in students]
        summary_table(rows, book)
    for line in report.duplicates:
        say(f"duplicate: {line}")
    say_unread(report)
    for line in report.retried:
        say(f"re-run alone after a timeout or a dead process: {line}")
    for line in report.sandbox_notices:
        say(f"sandbox: {line}")
    print(f"graded {len(report.graded)}, unchanged (skipped) {report.skipped}, grader faults {len(report.faults)}"
          f"  ({report.total_s:.1f} s, "
          f"{'warm-up reused from an identical earlier run' if report.cache_reused else 'warm-up'}"
          f" {report.warm_s:.1f} s)")
    print(f"gradebook: {report.gradebook}\ngrades:    {out / 'grades.csv'}\nreview:    {out / 'review.csv'}\n"
          f"feedback:  {out / 'feedback' / 'index.html'}")
    for fault in report.faults:
        say(f"GRADER FAULT {fault}", file=sys.stderr)
    return 1 if report.faults else 0


def _instructor_action(args, out: Path, gradebook: Path) -> int:
    from course_grader.results.export import SheetError, export_grades, export_review, import_into
    from course_grader.results.feedback import render_all
    from course_grader.results.gradebook import Gradebook

    if not gradebook.is_file():
        print(f"course grade: no gradebook at {gradebook} (grade first, or give --out / --gradebook)", file=sys.stderr)
        return 2
    with Gradebook(gradebook) as book:
        if args.clear_flag:
            if not (args.reason or "").strip():
                print('course grade: --clear-flag needs --reason "why the flag is wrong"', file=sys.stderr)
                return 2
            try:
                row = book.clear_flag(args.clear_flag, args.reason)
            except (LookupError, ValueError) as exc:
                say(f"course grade: {exc}", file=sys.stderr)
                return 2
            say(f"flag cleared: {row['student']} {row['exercise_name']} attempt {row['key'][:16]} now "
                  f"{row['auto_score']:g}/{row['auto_possible']:g} ({row['reason']})")
        else:
            try:
                result = import_into(book, args.import_review, out / "review.csv")
            except SheetError as exc:
                say(f"course grade: {exc}", file=sys.stderr)
                say("course grade: nothing was imported and no file was changed", file=sys.stderr)
                return 2
            for line in result.notes:
                say(f"  note: {line}")
            for line in result.kept:
                say(f"  not applied: {line}")
            say(result.summary())
        pages = render_all(book, out)
        export_grades(book, out / "grades.csv")
        export_review(book, out / "review.csv")
        print(f"{len(pages)} feedback pages re-rendered; grades.csv and review.csv rewritten in {out}")
    return 0


def _hand_back(args) -> int:
    from course_grader.results.gradebook import Gradebook
    from course_grader.results.handback import HandBackError, hand_back
    from course_grader.ui.hints import after_hand_back

    out = args.hand_back
    gradebook = args.gradebook or out / "gradebook.sqlite"
    if not gradebook.is_file():
        say(f"course grade: no gradebook at {gradebook} (grade first, or give --gradebook)", file=sys.stderr)
        return 2
    to = args.to or out.with_name(f"{out.resolve().name}-hand-back")
    try:
        with Gradebook(gradebook) as book:
            done = hand_back(book, out, to, zip_pages=args.zip, lms_ids=args.lms_ids)
    except HandBackError as exc:
        say(f"course grade: {exc}", file=sys.stderr)
        return 2
    for what, names in (("written answers still to review (scored 0 for now)", done.pending),
                        ("flagged (scores 0 until you clear the flag)", done.flagged),
                        ("not in --lms-ids (their course id is used)", done.unmapped)):
        if names:
            say(f"note: {len(names)} {what}: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
    say(f"hand-back: {len(done.folders)} student folders in {to}/ (STUDENT/index.html and one page per exercise"
        f"{'; STUDENT.zip beside each' if done.zips else ''}). Give each student their own folder, not {to}/ itself.")
    say(f"LMS files: {', '.join(str(p) for p in done.lms)}")
    say(after_hand_back(out, to))
    return 0


if __name__ == "__main__":
    sys.exit(main())
