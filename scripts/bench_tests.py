"""Time the test command with a cold and a warm compile cache (``make bench``).

Runs ``python -m pytest -n 2 --nbval --dist loadfile`` from the repository root
(what ``make test`` runs) twice: first with ``TORCHINDUCTOR_CACHE_DIR`` pointed
at a fresh temporary directory (cold), then again with the same directory
(warm). Then each notebook alone under ``pytest --nbval``, cold and warm, with
a fresh cache directory per notebook. Prints one small table: wall time, and the CPU
time the whole machine was busy meanwhile (from /proc/stat, so run it on a quiet
machine). On N cores no run can take less than its CPU time / N; the table prints
that floor beside the goals. A reference figure for the machine's speed comes first
(``import torch._dynamo`` in a fresh process), so figures from two machines can be
compared.

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


def test_env(**extra: str) -> dict[str, str]:
    """The environment make gives the test command: the Makefile unexports PYTHONDONTWRITEBYTECODE."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def plain(text: str) -> str:
    """``text`` without terminal colour codes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def notebook_command(path: Path) -> list[str]:
    return [python(), "-m", "pytest", "-p", "no:xdist", "--nbval", "-q", str(path.relative_to(ROOT))]


def notebooks(pattern: str | None) -> list[Path]:
    found = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
    return [p for p in found if pattern is None or pattern in str(p.relative_to(ROOT))]


def busy_cpu_seconds() -> float:
    """CPU time the whole machine has spent busy since boot (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def machine_reference(times: int = 3) -> tuple[float, float]:
    """Median wall and CPU seconds of ``import torch._dynamo`` in a fresh interpreter."""
    walls, cpus = [], []
    for _ in range(times):
        before = os.times()
        start = time.perf_counter()
        subprocess.run([python(), "-c", "import torch._dynamo"], check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = os.times()
        cpus.append(after.children_user + after.children_system - before.children_user - before.children_system)
    return sorted(walls)[times // 2], sorted(cpus)[times // 2]


def timed(command: list[str], cache_dir: str, log: Path | None) -> tuple[float, float, str]:
    """Wall time and machine-wide busy CPU time of ``command`` with the given inductor cache dir, and pass/FAIL."""
    env = test_env(TORCHINDUCTOR_CACHE_DIR=cache_dir)
    cpu_start = busy_cpu_seconds()
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = busy_cpu_seconds() - cpu_start
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"$ TORCHINDUCTOR_CACHE_DIR={cache_dir} {' '.join(command)}\n{proc.stdout}{proc.stderr}\n")
    summary = plain((proc.stdout.strip().splitlines() or [""])[-1])
    return seconds, cpu, ("pass" if proc.returncode == 0 else f"FAIL (exit {proc.returncode}): {summary}")


def cold_and_warm(command: list[str], log: Path | None) -> tuple[tuple[float, float], tuple[float, float], str]:
    """(wall, cpu) cold, (wall, cpu) warm, and the status."""
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache_dir:
        *cold, cold_status = timed(command, cache_dir, log)
        *warm, warm_status = timed(command, cache_dir, log)
    status = cold_status if cold_status != "pass" else warm_status
    return tuple(cold), tuple(warm), status


def table(rows: list[tuple[str, ...]]) -> str:
    header = ("what", "cold cache", "cold CPU", "warm cache", "warm CPU", "result")
    last = len(header) - 1
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: tuple[str, ...]) -> str:
        cells = zip(r, widths, strict=True)
        return "  ".join(c.ljust(w) if i in (0, last) else c.rjust(w) for i, (c, w) in enumerate(cells)).rstrip()

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
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

    print("timing the machine: import torch._dynamo in a fresh interpreter ...", file=sys.stderr, flush=True)
    ref_wall, ref_cpu = machine_reference()
    print(f"this machine: {os.cpu_count()} cores; import torch._dynamo takes {ref_wall:.1f} s "
          f"({ref_cpu:.1f} CPU-s), median of 3")
    rows, full = [], None
    for name, command in jobs:
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        (cold, cold_cpu), (warm, warm_cpu), status = cold_and_warm(command, args.log)
        rows.append((name, f"{cold:.1f} s", f"{cold_cpu:.0f} CPU-s", f"{warm:.1f} s", f"{warm_cpu:.0f} CPU-s", status))
        if name == "make test (full)":
            full = (cold, cold_cpu, warm, warm_cpu)
    print(table(rows))
    if full:
        cores = os.cpu_count() or 1
        cold, cold_cpu, warm, warm_cpu = full
        print(f"\ngoals for the full test command on this 2-core machine, quiet: "
              f"<= {GOAL_WARM_S} s warm (measured {warm:.1f} s), <= {GOAL_COLD_S} s cold (measured {cold:.1f} s)")
        print(f"floor on {cores} cores (CPU time / cores, if every core were busy throughout): "
              f"{warm_cpu / cores:.0f} s warm, {cold_cpu / cores:.0f} s cold")
    return 0 if all(r[3] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
