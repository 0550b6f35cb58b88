"""Our grader's throughput and per-submission overhead, with 1 and 2 workers.

    .venv/bin/python scripts/bench_grader.py [--jobs 1 2] [--kinds correct unanswered partial]

Grades the sample submissions of the given kinds (tests/samples/submissions; by default the
ones without deliberate timeouts) with ``course_grader.pipeline.grade_class.grade_class`` -- the one
function ``course grade`` calls -- into a fresh output folder per setting, and prints:

* submissions per minute, with and without the once-per-run set-up (sandbox start and the
  warm compile cache prepared from the model answers);
* per-submission overhead beyond the student's code: each submission's wall time minus the
  CPU time the sandbox measured for the student's own cells in the feedback kernel (so it
  covers kernel start, confinement, the instructor's cells, the measuring children and the
  bookkeeping), as median and maximum;
* the bare cost of one sandboxed kernel: start, one empty cell, stop.

Figures only; nothing is asserted (the machine is shared, the numbers vary).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SAMPLES = ROOT / "tests" / "samples" / "submissions"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_class import write_distinct  # noqa: E402


def bare_kernel_seconds(n: int = 3) -> list[float]:
    """Wall time of a sandboxed kernel that runs one empty cell, ``n`` times, after the host is up."""
    from course_grader.pipeline.session import instructor_paths
    from course_grader.sandbox import GradingHost, Limits

    times = []
    with GradingHost(hide=instructor_paths(ROOT / "solutions"), compile_cache=None, limits=Limits()) as host:
        with host.notebook_kernel() as kernel:   # the first one pays the fork server's start
            kernel.run_cell("pass")
        for _ in range(n):
            t0 = time.monotonic()
            with host.notebook_kernel() as kernel:
                kernel.run_cell("pass")
            times.append(time.monotonic() - t0)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    p.add_argument("--kinds", nargs="+", default=["correct", "unanswered", "partial"])
    args = p.parse_args(argv)
    from course_grader.pipeline.grade_class import grade_class

    work = Path(tempfile.mkdtemp(prefix="bench-grader-"))
    try:
        subs = work / "subs"
        subs.mkdir()
        files = [f for f in sorted(SAMPLES.glob("*__ex*.ipynb")) if f.name.split("__")[0] in args.kinds]
        for f in files:   # as distinct students hand them in: none equals a model answer (bench_class)
            write_distinct(f, f.name.split("__")[0], subs / f.name)
        print(f"{len(files)} sample submissions ({', '.join(args.kinds)})")
        for jobs in args.jobs:
            t0 = time.monotonic()
            report = grade_class(subs, work / f"out-{jobs}", jobs=jobs, progress=False)
            wall = time.monotonic() - t0
            graded = wall - report.warm_s
            over = [t.seconds - t.student_cpu_s for t in report.timings]
            print(f"jobs={jobs}: {len(files)} in {wall:5.1f} s = {60 * len(files) / wall:5.1f} submissions/min "
                  f"(set-up and warm cache {report.warm_s:4.1f} s; without it {60 * len(files) / graded:5.1f}/min); "
                  f"grader faults {len(report.faults)}")
            if over:
                print("        per-submission overhead beyond the student's code: "
                      f"median {statistics.median(over):4.2f} s, "
                      f"max {max(over):4.2f} s (over {len(over)} submissions; with {jobs} at once)")
            for fault in report.faults:
                print(f"  grader fault: {fault}")
        bare = bare_kernel_seconds()
        print(f"one sandboxed kernel (start, one empty cell, stop): median {statistics.median(bare):4.2f} s "
              f"of {len(bare)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
