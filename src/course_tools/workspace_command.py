"""``course workspace``: the command line of the student's workspace (``compile_course.workspace``).

The library stays in the student package, which the grader's ``course check`` and ``course submit`` use too;
its command line is tooling, and lives here.
"""

from __future__ import annotations

import os
import sys

from compile_course.workspace import refresh, sync, workspace_dir


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="course workspace",
        description="copy new lessons and exercises into your workspace (work/); never overwrites your changes")
    parser.add_argument("--refresh", metavar="FILE",
                        help="take the course's current version of FILE (yours is moved aside, not deleted)")
    parser.add_argument("--dir", help="the workspace folder (default: work/ in the checkout, or $COURSE_WORKSPACE)")
    args = parser.parse_args(argv)
    args.dir, why = workspace_dir(args.dir)
    if args.refresh:
        try:
            moved = refresh(args.refresh, args.dir)
        except KeyError:
            print(f"course workspace: the course has no file {args.refresh!r} "
                  "(give e.g. exercises/ex02_diagnose.ipynb)", file=sys.stderr)
            return 2
        if moved:
            print(f"your copy is now {os.path.relpath(moved)}")
        print(f"refreshed from the course: {args.refresh}")
        return 0
    report = sync(args.dir)
    for line in report.lines():
        print(line)
    copied = len(report.added) + len(report.restored) + len(report.updated)
    print(f"workspace {report.workspace} ({why}): {copied} file(s) copied, {report.unchanged} as shipped, "
          f"{report.yours + len(report.kept)} changed by you and kept"
          + (f" ({len(report.kept)} with a newer course version)" if report.kept else ""))
    return 0
