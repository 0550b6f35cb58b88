"""Run the test command beside N CPU hogs and print how often it passes (``make stress``).

The contract of a stored output is only worth something if a red run means the
code changed, not that the machine was busy. This script runs the README's test
command (``python -m pytest -n 2 --nbval --dist loadfile``) several times with
N busy-looping processes beside it, for each N asked for, and prints one row per
N: runs, passes, and the wall times. It starts the hogs itself and stops exactly
those processes (by their own pids) when a run ends.

  python scripts/stress_tests.py                    N = 0, 2, 4; 3 runs each
  python scripts/stress_tests.py --hogs 4 --runs 5  5 runs with 4 hogs
  python scripts/stress_tests.py --dry-run          print the plan, run nothing

It prints figures and returns 1 if any run failed; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tests import ROOT, plain, test_env  # noqa: E402
from bench_tests import full_command as test_command  # noqa: E402

HOG_CODE = "while True: pass"


def start_hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG_CODE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


def failures(output: str) -> list[str]:
    """pytest's "FAILED ..." and "ERROR ..." lines (its short test summary)."""
    return [line for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))]


def one_run(command: list[str], hogs: int, log: Path | None) -> tuple[bool, float, str]:
    """Run the test command once beside ``hogs`` busy loops: (passed, wall seconds, what to report).

    A failed run reports pytest's last line and the tests that failed, so a failure that only
    load brings out is named even when no --log was asked for.
    """
    procs = start_hogs(hogs)
    try:
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=test_env())
        seconds = time.perf_counter() - start
    finally:
        stop_hogs(procs)
    output = plain(proc.stdout)
    last = (output.strip().splitlines() or [""])[-1]
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"=== {hogs} hog(s): exit {proc.returncode}, {seconds:.1f} s\n{proc.stdout}{proc.stderr}\n")
    return proc.returncode == 0, seconds, "\n    ".join([last, *failures(output)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--hogs", type=int, nargs="+", default=[0, 2, 4],
                        help="numbers of CPU hogs to try (default 0 2 4)")
    parser.add_argument("--runs", type=int, default=3, help="runs for each number of hogs (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (make test uses 2)")
    parser.add_argument("--log", type=Path, help="append every run's output to this file")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    args = parser.parse_args(argv)
    command = test_command(args.jobs)
    if args.dry_run:
        for n in args.hogs:
            print(f"{args.runs} x [{n} hog(s) running {HOG_CODE!r}]  {' '.join(command)}")
        return 0

    rows = []
    failed = 0
    for n in args.hogs:
        results = []
        for i in range(args.runs):
            print(f"{n} hog(s), run {i + 1}/{args.runs} ...", file=sys.stderr, flush=True)
            ok, seconds, last = one_run(command, n, args.log)
            results.append((ok, seconds))
            if not ok:
                failed += 1
                print(f"  FAILED: {last}", file=sys.stderr)
        times = [s for _, s in results]
        rows.append((str(n), f"{sum(ok for ok, _ in results)}/{len(results)}",
                     f"{min(times):.0f} s", f"{statistics.median(times):.0f} s", f"{max(times):.0f} s"))
    header = ("hogs", "passed", "fastest", "median", "slowest")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
