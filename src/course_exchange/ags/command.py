"""``course grade post-scores OUT [--dry-run]``: a graded class's final scores to the LMS, by LTI AGS.

  course grade post-scores OUT [--course C] [--roster MAP.csv] [--key PATH] [--gradebook PATH] [--dry-run]
                           [--settings FILE] [--hub-state DIR] [--lineitems URL]

OUT is the results folder of ``course grade run`` (its gradebook). Each student's final score of each
exercise is posted to the LMS's line item for that exercise (``resourceId`` exNN, created when missing),
for the LMS user the student is. First the command prints what it will post (``--dry-run`` stops there:
it sends and records nothing), then what it posted: each student, exercise and score, new, changed or
unchanged. A score the LMS already holds is not sent again, so posting the same gradebook twice changes
nothing in the LMS.

Never posted, and named with the reason: a flagged attempt, one with written answers still to review, a
rejected file or a grader fault, and a student with no known LMS user id. A file that named no student is
never in the gradebook.

Who is who in the LMS: the LTI user id (``sub``) the hub recorded when the student launched the course
from the LMS; ``--roster MAP.csv`` (columns ``student,lti_user_id``) adds or overrides ids. The platform
and the tool's key come from the hub's LTI settings (``$COURSE_HUB_LTI``, or ``--settings``), the
course's line items URL from its last launch (recorded in the hub's state folder, ``$COURSE_HUB_STATE``
or ``--hub-state``; or ``--lineitems``); ``--key`` names another key file (``course lti-key PATH``).

Exit status: 0 when every score that may be posted is in the LMS; 1 when the LMS failed part way (what was
posted is recorded in the gradebook; run the same command again for the rest); 2 for usage errors.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from course_grader.api import HandinError, LmsScores

from .client import AgsClient
from .post import run
from .tool_key import ToolKeyError, load_private
from .where import WhereError, lms_users, target_for

ROSTER_COLUMNS = ("student", "lti_user_id")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="course grade post-scores", allow_abbrev=False, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, metavar="OUT", help="the results folder of course grade run")
    p.add_argument("--dry-run", action="store_true", help="say what would be posted; post and record nothing")
    p.add_argument("--course", help="the course id (default: the only course of the hub's LTI settings)")
    p.add_argument("--roster", type=Path, metavar="MAP.csv", help="student,lti_user_id rows (added to the launches')")
    p.add_argument("--key", type=Path, help="the tool's private key (default: the LTI settings' tool key)")
    p.add_argument("--gradebook", type=Path, help="SQLite gradebook (default: OUT/gradebook.sqlite)")
    p.add_argument("--settings", type=Path, help="the hub's LTI settings file (default: $COURSE_HUB_LTI)")
    p.add_argument("--hub-state", type=Path, metavar="DIR",
                   help="the hub's state folder, where launches are recorded (default: $COURSE_HUB_STATE)")
    p.add_argument("--lineitems", metavar="URL", help="the course's AGS line items URL (default: its last launch's)")
    return p


def read_roster(path: Path) -> dict[str, str]:
    """``{student: LTI user id}`` from a CSV with a header ``student,lti_user_id``; ValueError says what is wrong."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise ValueError(f"cannot read --roster {path}: {exc.strerror}") from None
    if rows and not set(ROSTER_COLUMNS) <= set(rows[0]):
        raise ValueError(f"--roster {path}: the header must name {', '.join(ROSTER_COLUMNS)}")
    out = {}
    for n, row in enumerate(rows, start=2):
        student, user = (row.get(c, "").strip() for c in ROSTER_COLUMNS)
        if not student or not user:
            raise ValueError(f"--roster {path} line {n}: student and lti_user_id are both needed")
        out[student] = user
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        roster = read_roster(args.roster) if args.roster else {}
        target, course, key_path = target_for(args.course, args.key, settings_file=args.settings,
                                              hub_state=args.hub_state, lineitems=args.lineitems)
        users = {**lms_users(course, hub_state=args.hub_state), **roster}
        pem = load_private(key_path)
        with LmsScores(args.out, args.gradebook) as book:
            return run(book, AgsClient(target, pem), users, args.dry_run)
    except (ValueError, WhereError, ToolKeyError, HandinError) as exc:
        print(f"course grade post-scores: {exc}; nothing was posted", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
