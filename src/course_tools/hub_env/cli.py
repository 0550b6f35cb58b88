"""``course hub-env PREFIX``: build the students' shared environment of a hub (``make hub-env PREFIX=...``).

  course hub-env [PREFIX]            build (or rebuild) it; PREFIX default /opt/torch-compile-course/env
  course hub-env --check [PREFIX]    change nothing: scan an environment already built (exit 1 on a finding)

Run it as root on the hub's machine, from the instructor's checkout (its venv gives the third-party
packages, its ``solutions/`` what is looked for). ``make hub`` runs the students' servers from PREFIX.
Exit status: 0 built (or clean), 1 something students must not read was found, 2 it cannot be built as asked.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from compile_course.paths import ROOT
from course_grader.exercise.publish import PublishError

from .build import DEFAULT_PREFIX, BuildError, Leaked, build, read_mark
from .scan import audit


def default_edition() -> str:
    """``$COURSE_HUB_EDITION``, else ``build/edition`` (published there first when missing), as ``make hub``."""
    chosen = os.environ.get("COURSE_HUB_EDITION")
    if chosen:
        return chosen
    edition = ROOT / "build" / "edition"
    if not (edition / ".git").is_dir():
        from course_grader.exercise.publish import publish

        print(f"hub-env: no student edition yet: publishing one into {edition} (course publish)")
        publish(edition)
    return str(edition)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="course hub-env", description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prefix", type=Path, nargs="?", default=DEFAULT_PREFIX,
                   help=f"the environment's folder (default {DEFAULT_PREFIX}, as TLJH's /opt/tljh/user)")
    p.add_argument("--edition", help="the student edition, a path or git URL (default: $COURSE_HUB_EDITION, "
                                     "else build/edition, published when missing)")
    p.add_argument("--python", type=Path, help="the base Python (default: the instructor venv's, else "
                                               "/usr/bin/pythonX.Y when that one is closed to other users)")
    p.add_argument("--from-venv", type=Path, default=Path(sys.prefix), help="the venv whose third-party packages "
                   "are taken (default: this one)")
    p.add_argument("--solutions", type=Path, help="the solutions whose hidden tests are looked for "
                                                  "(default: solutions/ of this checkout)")
    p.add_argument("--check", action="store_true", help="change nothing: scan the environment at PREFIX")
    args = p.parse_args(argv)
    prefix = Path(os.path.abspath(args.prefix))
    if args.check:
        if read_mark(prefix) is None:
            print(f"course hub-env: {prefix} is not a complete environment of course hub-env; build it with "
                  f"make hub-env PREFIX={prefix}", file=sys.stderr)
            return 2
        found = audit(prefix, solutions=args.solutions)
        for problem in found.problems:
            print(f"FOUND {problem}")
        print(f"hub-env: {found.scanned}")
        return 1 if found.problems else 0
    try:
        edition = args.edition or default_edition()
        build(prefix, edition, python=args.python, source=args.from_venv, solutions=args.solutions)
    except BuildError as exc:
        print(f"course hub-env: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, Leaked) else 2
    except PublishError as exc:
        print(f"course hub-env: the edition could not be published: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:      # most often: PREFIX under /opt, not run as root
        print(f"course hub-env: {exc.filename or prefix}: {exc.strerror or exc} (build it as root, as "
              "`sudo make hub-env`, or give a PREFIX you can write)", file=sys.stderr)
        return 2
    print(f"next: make hub   (it runs the students' servers from {prefix}; COURSE_HUB_ENV={prefix} names it "
          "when it is not the default)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
