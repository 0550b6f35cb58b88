"""``python -m course_grader.samples``: regenerate tests/samples/submissions, or ``--check`` a grading run."""

import argparse
import sys
from pathlib import Path

from compile_course.paths import ROOT
from course_grader import samples
from course_grader.samples.expectations import check_graded


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=samples.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "samples" / "submissions")
    p.add_argument("--check", type=Path, metavar="GRADED",
                   help="instead of writing samples: compare the gradebook of a `course grade run SAMPLES "
                        "--out GRADED` run over the samples in --out with their expected.json (exit 1 on any "
                        "difference)")
    p.add_argument("--exercise", help="with --check: only this exercise's samples (exNN)")
    args = p.parse_args(argv)
    if args.check is not None:
        return check_graded(args.out, args.check, args.exercise)
    expected = samples.make_samples(args.solutions, args.out)
    print(f"{len(expected)} samples -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
