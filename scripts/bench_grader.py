"""Grader throughput on the bundled samples: submissions per minute with 1 and 2 workers.

    .venv/bin/python scripts/bench_grader.py [--jobs 1 2] [--kinds correct unanswered partial]

Grades the sample submissions that run a kernel (correct, partial, unanswered
by default: the ones without deliberate timeouts) into a fresh gradebook per
setting, and prints submissions per minute plus the per-submission overhead:
wall time per submission minus the time its cells took to run (kernel start,
sandbox, torch import, fingerprints, scan, bookkeeping).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from compile_course.grading.grade import Settings, grade_all  # noqa: E402
from compile_course.grading.gradebook import Gradebook  # noqa: E402
from compile_course.grading.load import discover  # noqa: E402
from compile_course.grading.samples import _make_samples_module  # noqa: E402
from compile_course.grading.source import load_sources  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    p.add_argument("--kinds", nargs="+", default=["correct", "unanswered", "partial"])
    p.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-grader-"))
    try:
        _make_samples_module().make_samples(args.solutions, work / "subs")
        found = [f for f in discover(work / "subs") if f.path.name.split("__")[0] in args.kinds]
        sources = load_sources(args.solutions)
        settings = Settings(hide=[args.solutions.resolve(), ROOT / ".git", work])
        print(f"{len(found)} sample submissions ({', '.join(args.kinds)}) from {len(sources)} exercises")
        for jobs in args.jobs:
            book = Gradebook(work / f"gb-{jobs}.sqlite")
            t0 = time.monotonic()
            report = grade_all(found, sources, book, settings, jobs, progress=False)
            wall = time.monotonic() - t0
            per = [o.seconds for o in report.graded]
            print(f"jobs={jobs}: {len(found)} in {wall:5.1f} s = {60 * len(found) / wall:5.1f} submissions/min; "
                  f"mean kernel lifetime {sum(per) / len(per):4.1f} s; faults {len(report.faults)}")
            for fault in report.faults:
                print(f"  grader fault: {fault}")
            book.close()
        # Overhead: the same kernel with no student cells at all, i.e. start + sandbox + imports + fingerprints.
        from compile_course.grading.run import Limits, run_cells

        t0 = time.monotonic()
        empty = run_cells([], Limits(), hide=[], uid=61000)
        print(f"per-submission overhead beyond the student's code (empty notebook, one kernel): "
              f"{time.monotonic() - t0:4.1f} s (of which kernel start to ready {empty.startup_seconds:4.1f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
