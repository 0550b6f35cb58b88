"""Time the test command with a cold and a warm compile cache (``make bench``).

Runs ``python -m pytest -n 2 --nbval --dist loadfile`` from the repository root
(what ``make test`` runs) twice: first with ``TORCHINDUCTOR_CACHE_DIR`` pointed
at a fresh temporary directory (cold), then again with the same directory
(warm). Then each notebook alone under ``pytest --nbval``, cold and warm, with
a fresh cache directory per notebook. Prints one small table.

  python scripts/bench_tests.py                 everything (takes a while)
  python scripts/bench_tests.py --only 01_      only notebooks whose path contains 01_ (no full run)
  python scripts/bench_tests.py --dry-run       print the commands, run nothing
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
GOAL_WARM_S, GOAL_COLD_S = 60, 180   # issue 10's goals, printed beside the figures (never asserted)


def python() -> str:
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable


def full_command(jobs: int) -> list[str]:
    return [python(), "-m", "pytest", "-n", str(jobs), "--nbval", "--dist", "loadfile", "-q"]


def notebook_command(path: Path) -> list[str]:
    return [python(), "-m", "pytest", "-p", "no:xdist", "--nbval", "-q", str(path.relative_to(ROOT))]


def notebooks(pattern: str | None) -> list[Path]:
    found = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
    return [p for p in found if pattern is None or pattern in str(p.relative_to(ROOT))]


def timed(command: list[str], cache_dir: str, log: Path | None) -> tuple[float, str]:
    """Wall time of ``command`` with the given inductor cache dir, and pass/FAIL."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"$ TORCHINDUCTOR_CACHE_DIR={cache_dir} {' '.join(command)}\n{proc.stdout}{proc.stderr}\n")
    summary = re.sub(r"\x1b\[[0-9;]*m", "", (proc.stdout.strip().splitlines() or [""])[-1])
    return seconds, ("pass" if proc.returncode == 0 else f"FAIL (exit {proc.returncode}): {summary}")


def cold_and_warm(command: list[str], log: Path | None) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache_dir:
        cold, cold_status = timed(command, cache_dir, log)
        warm, warm_status = timed(command, cache_dir, log)
    status = cold_status if cold_status != "pass" else warm_status
    return cold, warm, status


def table(rows: list[tuple[str, str, str, str]]) -> str:
    header = ("what", "cold cache", "warm cache", "result")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]

    def fmt(r: tuple[str, ...]) -> str:
        cells = zip(r, widths, strict=True)
        return "  ".join(c.ljust(w) if i in (0, 3) else c.rjust(w) for i, (c, w) in enumerate(cells)).rstrip()

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", metavar="PATTERN",
                        help="time only notebooks whose path contains PATTERN; skips the full run")
    parser.add_argument("--full", action="store_true", help="with --only, also time the full test command")
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers for the full run (make test uses 2)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    parser.add_argument("--log", type=Path, help="append every command's output to this file")
    args = parser.parse_args(argv)

    selected = notebooks(args.only)
    jobs: list[tuple[str, list[str]]] = []
    if args.only is None or args.full:
        jobs.append(("make test (full)", full_command(args.jobs)))
    jobs += [(str(p.relative_to(ROOT)), notebook_command(p)) for p in selected]
    if not jobs or (args.only is not None and not selected):
        print(f"no notebooks match {args.only!r}", file=sys.stderr)
        return 2

    if args.dry_run:
        for name, command in jobs:
            print(f"{name}:\n  TORCHINDUCTOR_CACHE_DIR=<fresh tmp dir> {' '.join(command)}"
                  "   (cold, then warm with the same dir)")
        return 0

    rows = []
    for name, command in jobs:
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        cold, warm, status = cold_and_warm(command, args.log)
        rows.append((name, f"{cold:.1f} s", f"{warm:.1f} s", status))
    print(table(rows))
    full = [r for r in rows if r[0] == "make test (full)"]
    if full:
        print(f"\ngoals for the full test command on this 2-core machine, quiet: "
              f"<= {GOAL_WARM_S} s warm (measured {full[0][2]}), <= {GOAL_COLD_S} s cold (measured {full[0][1]})")
    return 0 if all(r[3] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
