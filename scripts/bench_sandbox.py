"""Print the sandbox's per-submission overhead: what a run costs beyond the student's own code.

    .venv/bin/python scripts/bench_sandbox.py [--runs N]

Figures (wall clock, median of N):
* template start: once per grading process, by its first ``GradingHost`` (imports torch, Dynamo,
  inductor, IPython);
* notebook kernel: fork + namespaces + cgroup + mounts + IPython shell, one empty cell, teardown;
* measuring child: the same for one ``measure`` call of an empty harness entry;
* fresh interpreter: what each kernel paid before the fork server (``python -I`` importing
  the same modules), for comparison.

Timings depend on the machine and its load; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course_grader.sandbox import GradingHost

FRESH_IMPORTS = ("import torch, torch._dynamo, torch._inductor.compile_fx, "
                 "IPython.core.interactiveshell, compile_course")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        harness = Path(tmp) / "harness"
        harness.mkdir()
        (harness / "__init__.py").write_text("")
        (harness / "bench.py").write_text("def noop(payload):\n    return {'ok': True}\n")

        start = time.perf_counter()
        with GradingHost(hide=[], harness_source=harness) as host:
            template_s = time.perf_counter() - start

            def kernel_once():
                with host.notebook_kernel() as kernel:
                    kernel.run_cell("pass")

            kernel_s = [timed(kernel_once) for _ in range(args.runs)]
            measure_s = [timed(lambda: host.measure("bench", "noop", {})) for _ in range(args.runs)]
            notices = host.notices
        fresh_s = [timed(lambda: subprocess.run([sys.executable, "-I", "-c", FRESH_IMPORTS], check=True))
                   for _ in range(max(1, args.runs // 3))]

    print(f"{'what':<42}{'median s':>10}{'max s':>9}")
    print(f"{'template start (once per process)':<42}{template_s:>10.2f}{template_s:>9.2f}")
    for label, values in (("notebook kernel: start, 1 cell, stop", kernel_s),
                          ("measuring child: start, 1 call, stop", measure_s),
                          ("fresh interpreter (before the fork server)", fresh_s)):
        print(f"{label:<42}{statistics.median(values):>10.3f}{max(values):>9.3f}")
    per_submission = statistics.median(kernel_s) + statistics.median(measure_s)
    print(f"\nper-submission overhead (1 kernel + 1 measuring child): {per_submission:.2f} s "
          f"(goal: <= 1 s; a fresh interpreter alone: {statistics.median(fresh_s):.2f} s)")
    for notice in notices:
        print(f"notice: {notice}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
