"""``course grade SUB``: grade a folder of submissions, import a review sheet, clear a flag, or hand back.

Each subcommand is an argparse subparser (``course grade SUB --help``), registered by one row of
:data:`SUBCOMMANDS`::

    Subcommand("name", "one line for the usage", arguments, run)

``arguments(p)`` adds the subcommand's own arguments to its parser ``p`` (:func:`results_options` adds
the shared ``--out`` / ``--gradebook``); ``run(args) -> int`` does the work and returns the exit status,
and its docstring is the subcommand's ``--help`` text. A new subcommand is those two functions (in this
module or its own, imported inside ``run`` so ``--help`` stays fast) and its row; nothing else changes.
Defaults (jobs, the gradebook, OUT, limits) are ``config.GradeOptions``', never repeated here: an option
not given is not passed on.

Exit status, for every subcommand: 0 when the command did its work (whatever the students scored); 1
for a grader fault (unreadable solutions, a model answer that fails its own tests, a crash of the
grader); 2 for usage errors, and when nothing could be done (no file names a student).

``course grade post-scores`` (scores to the LMS by LTI AGS) is the exchange's, ``course_exchange.ags``:
``course_tools.cli`` sends it there before this parser, since the grader does not import the exchange.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from compile_course.paths import SOLUTIONS
from course_grader.intake.discover import HAND_IN_NAMES
from course_grader.results.shown import printable

DESCRIPTION = """\
Grade a class's hand-ins and work with the results (docs/grading.md).

  course grade run DIR [--exercise exNN] [--jobs N] [--out OUT] [--gradebook PATH]
                       [--scheduler ADDRESS | --cluster local:N]
  course grade import-review SHEET.csv --out OUT [--gradebook PATH]
  course grade clear-flag ATTEMPT --reason "..." --out OUT [--gradebook PATH]
  course grade hand-back OUT [--to DIR] [--zip] [--lms-ids MAP.csv]

`course grade SUB --help` describes each. Exit status: 0 when the command did its work, whatever the
students scored; 1 for a grader fault; 2 for usage errors and when nothing could be graded."""


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def say(text: str, file=None) -> None:
    """Print one line that may quote untrusted names (file names, student ids, reasons): escaped by
    ``shown.printable``, so no name can start a line of its own or drive the terminal."""
    print(printable(text), file=file or sys.stdout)


def fail(text: str) -> int:
    """``course grade: TEXT`` on stderr (escaped); the usage-error exit status."""
    say(f"course grade: {text}", file=sys.stderr)
    return 2


def say_unread(report, file=None) -> None:
    """The files of DIR that were not graded: without a student, or not hand-ins at all."""
    for line in report.unattributed:
        say(f"not graded (no student): {line}", file=file)
    for line in report.problems:
        say(f"problem: {line}", file=file)


def results_options(p: argparse.ArgumentParser, out_required: bool) -> None:
    """``--out OUT`` and ``--gradebook PATH``, shared by the subcommands that read or write a results folder."""
    p.add_argument("--out", type=Path, required=out_required, metavar="OUT",
                   help="results folder" + ("" if out_required else " (default: build/grading/<name of DIR>)"))
    p.add_argument("--gradebook", type=Path, metavar="PATH", help="SQLite gradebook (default: OUT/gradebook.sqlite)")


def gradebook_of(args, out: Path, give: str = "--out / --gradebook") -> Path | None:
    """The gradebook the command works on (``GradeOptions``' default unless ``--gradebook``), or None with the
    usage error said when there is none yet (``give``: the options that would name another)."""
    from course_grader.config import GradeOptions

    gradebook = GradeOptions(gradebook=args.gradebook).gradebook_in(out)
    if gradebook.is_file():
        return gradebook
    fail(f"no gradebook at {gradebook} (grade first, or give {give})")
    return None


# ---------------------------------------------------------------- course grade run

def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, at least 1, not {text!r}")
    return int(text)


def _local_cluster(text: str) -> int:
    n = text.removeprefix("local:")
    if not text.startswith("local:") or not n.isdigit() or int(n) < 1:
        raise argparse.ArgumentTypeError(f"--cluster takes local:N (N workers), not {text!r}")
    return int(n)


def run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submissions", type=Path, metavar="DIR",
                   help="STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb files")
    p.add_argument("--exercise", help="grade only this exercise: its id (ex02) or its name (ex02_diagnose)")
    p.add_argument("--jobs", type=_at_least_one, metavar="N",
                   help="submissions graded at once (default: one a core this process may use, no more than "
                        "memory holds at each run's memory limit; docs/grading.md)")
    results_options(p, out_required=False)
    p.add_argument("--solutions", type=Path, default=SOLUTIONS, help="the instructor's source notebooks")
    p.add_argument("--cpu-per-cell", type=_at_least_one, metavar="S",
                   help="CPU seconds per cell or measuring request (default: the sandbox's)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--unconfined", action="store_true",
                   help="grade without root, in a weaker sandbox (students' code runs as you: see docs/sandbox.md)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on the workers of this Dask scheduler (tcp://host:8786); see docs/grading.md")
    where.add_argument("--cluster", metavar="local:N", type=_local_cluster,
                       help="start a Dask LocalCluster of N worker processes here for this run")


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


def given_options(args) -> dict:
    """The ``GradeOptions`` fields the command line set; the rest keep their declared defaults."""
    given = {"solutions": args.solutions, "exercise": args.exercise, "progress": not args.no_progress,
             "unconfined": args.unconfined, "gradebook": args.gradebook, "jobs": args.jobs}
    if args.cpu_per_cell:
        from course_grader.sandbox.limits import Limits

        given["limits"] = Limits.scaled(args.cpu_per_cell)
    return {k: v for k, v in given.items() if v is not None}


def run(args) -> int:
    """Grade every hand-in of DIR. Results go to OUT (default build/grading/<name of DIR>/): gradebook.sqlite,
    grades.csv, review.csv and feedback/ (one page per student and exercise, and index.html). OUT and the
    gradebook are never read as hand-ins, also when they lie inside DIR. Exit 2 when nothing in DIR could be
    graded (no file names a student); 1 when the grader faulted on any hand-in (a re-run grades it)."""
    if not args.submissions.is_dir() or args.submissions.is_symlink():
        return fail(f"{args.submissions} is not a folder")
    if why := _nothing_to_grade(args.submissions, args.exercise):
        return fail(f"{why}; nothing was graded and nothing was created")

    from course_grader.config import GradeOptions
    from course_grader.errors import GraderError, UsageError
    from course_grader.pipeline.grade_class import grade_class
    from course_grader.results.gradebook import Gradebook
    from course_grader.results.private import grading_root

    out = args.out
    if out is None:
        if why := grading_root()[1]:
            print(f"course grade: {why}")
        out = GradeOptions.results_for(args.submissions)
    try:
        with ExitStack() as stack:
            executor = None
            if args.scheduler or args.cluster:   # only then is Dask imported
                from course_grader.pipeline.cluster import DaskExecutor, local_cluster

                executor = DaskExecutor(args.scheduler or stack.enter_context(local_cluster(args.cluster)))
            report = grade_class(args.submissions, out, GradeOptions(executor=executor, **given_options(args)))
    except UsageError as exc:
        return fail(str(exc))
    except GraderError as exc:
        say(f"grader fault: {exc}", file=sys.stderr)
        return 1
    if not (report.graded or report.skipped or report.faults):
        say_unread(report, sys.stderr)
        return fail(f"nothing in {args.submissions} could be graded: hand-ins are "
                    f"{HAND_IN_NAMES} (course collect writes them so)")
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


# ---------------------------------------------------------------- import-review and clear-flag

def _rewrite_results(book, out: Path) -> None:
    """After a change by hand: the feedback pages, grades.csv and review.csv of OUT again."""
    from course_grader.results.export import export_grades, export_review
    from course_grader.results.feedback import render_all

    pages = render_all(book, out)
    export_grades(book, out / "grades.csv")
    export_review(book, out / "review.csv")
    print(f"{len(pages)} feedback pages re-rendered; grades.csv and review.csv rewritten in {out}")


def import_review_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sheet", type=Path, metavar="SHEET", help="the review sheet (OUT/review.csv, filled in)")
    results_options(p, out_required=True)


def import_review(args) -> int:
    """Import the scores and comments of a filled-in review sheet (OUT/review.csv) into the gradebook, then
    re-render OUT's pages and CSV files. A sheet that cannot be read changes nothing; a row that cannot be
    applied is named and left out."""
    from course_grader.errors import SheetError
    from course_grader.results.export import import_into
    from course_grader.results.gradebook import Gradebook

    if (gradebook := gradebook_of(args, args.out)) is None:
        return 2
    with Gradebook(gradebook) as book:
        try:
            result = import_into(book, args.sheet, args.out / "review.csv")
        except SheetError as exc:
            fail(str(exc))
            return fail("nothing was imported and no file was changed")
        for line in result.notes:
            say(f"  note: {line}")
        for line in result.kept:
            say(f"  not applied: {line}")
        say(result.summary())
        _rewrite_results(book, args.out)
    return 0


def clear_flag_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("attempt", metavar="ATTEMPT", help="the flagged attempt: its id, or a prefix of it")
    p.add_argument("--reason", required=True, help="why the flag is wrong (recorded in the gradebook)")
    results_options(p, out_required=True)


def clear_flag(args) -> int:
    """Clear the flags of one attempt (its score then counts), with the reason recorded in the gradebook, and
    re-render OUT's pages and CSV files."""
    from course_grader.results.gradebook import Gradebook

    if not args.reason.strip():
        return fail('clear-flag needs --reason "why the flag is wrong"')
    if (gradebook := gradebook_of(args, args.out)) is None:
        return 2
    with Gradebook(gradebook) as book:
        try:
            row = book.clear_flag(args.attempt, args.reason)
        except (LookupError, ValueError) as exc:
            return fail(str(exc))
        say(f"flag cleared: {row['student']} {row['exercise_name']} attempt {row['key'][:16]} now "
            f"{row['auto_score']:g}/{row['auto_possible']:g} ({row['reason']})")
        _rewrite_results(book, args.out)
    return 0


# ---------------------------------------------------------------- hand-back

def hand_back_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", type=Path, metavar="OUT", help="the results folder of a course grade run")
    p.add_argument("--gradebook", type=Path, metavar="PATH", help="SQLite gradebook (default: OUT/gradebook.sqlite)")
    p.add_argument("--to", type=Path, metavar="DIR",
                   help="the folder of the students' folders (default: OUT-hand-back beside OUT)")
    p.add_argument("--zip", action="store_true", help="also a STUDENT.zip per student")
    p.add_argument("--lms-ids", type=Path, metavar="MAP.csv",
                   help="student,lms_id[,name,section,canvas_id,sis_user_id] per student")


def hand_back(args) -> int:
    """Write one folder per student with only their own pages (DIR/STUDENT/, readable once copied to them) and,
    in OUT/lms/, grades.csv (one row per student, with total), canvas.csv and moodle.csv gradebook imports
    (docs/grading.md)."""
    from course_grader.errors import HandBackError
    from course_grader.results.gradebook import Gradebook
    from course_grader.results.handback import hand_back as write_hand_back
    from course_grader.ui.hints import after_hand_back

    if (gradebook := gradebook_of(args, args.out, give="another OUT or --gradebook")) is None:
        return 2
    to = args.to or args.out.with_name(f"{args.out.resolve().name}-hand-back")
    try:
        with Gradebook(gradebook) as book:
            done = write_hand_back(book, args.out, to, zip_pages=args.zip, lms_ids=args.lms_ids)
    except HandBackError as exc:
        return fail(str(exc))
    for what, names in (("written answers still to review (scored 0 for now)", done.pending),
                        ("flagged (scores 0 until you clear the flag)", done.flagged),
                        ("not in --lms-ids (their course id is used)", done.unmapped)):
        if names:
            say(f"note: {len(names)} {what}: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
    say(f"hand-back: {len(done.folders)} student folders in {to}/ (STUDENT/index.html and one page per exercise"
        f"{'; STUDENT.zip beside each' if done.zips else ''}). Give each student their own folder, not {to}/ itself.")
    say(f"LMS files: {', '.join(str(p) for p in done.lms)}")
    say(after_hand_back(args.out, to))
    return 0


# ---------------------------------------------------------------- the subcommands, in the order --help lists them

SUBCOMMANDS = (
    Subcommand("run", "grade a folder of hand-ins", run_arguments, run),
    Subcommand("import-review", "import a filled-in review sheet", import_review_arguments, import_review),
    Subcommand("clear-flag", "clear the flags of an attempt, with a reason", clear_flag_arguments, clear_flag),
    Subcommand("hand-back", "each student's own feedback folder, and LMS grade files", hand_back_arguments,
               hand_back),
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="course grade", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    subs = p.add_subparsers(dest="subcommand", required=True,
                            title="subcommands (course grade SUB --help)")
    for sub in SUBCOMMANDS:
        sp = subs.add_parser(sub.name, allow_abbrev=False, help=sub.help, description=inspect.getdoc(sub.run))
        sub.arguments(sp)
        sp.set_defaults(run=sub.run)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
