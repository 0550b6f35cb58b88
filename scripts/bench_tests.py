"""Time the test command against this machine's own speed (``make bench``).

First the reference: ``import torch._dynamo`` in a fresh interpreter (median of 3, again after the
runs), so figures from two machines, or two hours of one, can be compared. Then
``python -m pytest -n 2 --nbval --dist loadfile`` from the repository root (what ``make test`` runs),
twice: with ``TORCHINDUCTOR_CACHE_DIR`` pointed at a fresh temporary directory (cold), then again with
the same directory (warm); ``--warm-only`` runs it once, with the machine's own cache. Each full run
writes a JUnit file, and the script prints:

* the wall time as a multiple of the reference (issue 36's goals: at most 35x on a quiet 2-core
  machine, at most 60x under load 4), beside the load average sampled through the run;
* the ten slowest test files (the sum of their tests' times, fixtures included, over all workers);
* the CPU time the whole machine was busy meanwhile (from /proc/stat): on N cores no run can take
  less than its CPU time / N.

Then each notebook alone under ``pytest --nbval``, cold and warm, with a fresh cache directory per
notebook. It prints figures and asserts nothing about time: a benchmark, not a timed test.

  python scripts/bench_tests.py                 everything (takes a while)
  python scripts/bench_tests.py --warm-only     one full run, no notebooks alone
  python scripts/bench_tests.py --only 01_      only notebooks whose path contains 01_ (no full run)
  python scripts/bench_tests.py --junit F.xml   only the ten slowest files of an earlier run's JUnit file
  python scripts/bench_tests.py --dry-run       print the commands, run nothing
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
# issue 36's goals for the test command, as multiples of the reference (printed beside the figures, never asserted)
GOAL_QUIET_X, GOAL_LOADED_X, GOAL_LOAD = 35, 60, 4
SLOWEST = 10   # test files listed
LOAD_EVERY_S = 5


def python() -> str:
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable


def full_command(jobs: int, junit: Path | None = None) -> list[str]:
    return [python(), "-m", "pytest", "-n", str(jobs), "--nbval", "--dist", "loadfile", "-q",
            *([f"--junitxml={junit}"] if junit else [])]


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


class LoadSampler:
    """The 1-minute load average, read every few seconds while a run lasts: ``mean`` and ``peak``."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(LOAD_EVERY_S):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mean(self) -> float:
        return sum(self.samples) / max(1, len(self.samples))

    @property
    def peak(self) -> float:
        return max(self.samples, default=0.0)


def test_file(classname: str) -> str:
    """The file a JUnit ``classname`` belongs to (``tests.hostile.test_x.TestY`` -> ``tests/hostile/test_x.py``,
    nbval's ``notebooks.10_x.ipynb`` -> ``notebooks/10_x.ipynb``): the longest leading part that is a file."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        stem = "/".join(parts[:n])
        for candidate in (stem, f"{stem}.py", f"{stem}.ipynb"):
            if (ROOT / candidate).is_file():
                return candidate
    return classname


def slowest_files(junit: Path, n: int = SLOWEST) -> list[tuple[str, float, int]]:
    """``(file, seconds, tests)`` of the ``n`` test files whose tests took longest, summed (pytest's JUnit
    time of a test includes its set-up, so a module fixture counts in its file's first test)."""
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = test_file(case.get("classname", ""))
        seconds[name] += float(case.get("time") or 0)
        counts[name] += 1
    ranked = sorted(seconds, key=seconds.get, reverse=True)
    return [(name, seconds[name], counts[name]) for name in ranked[:n]]


def slowest_table(junit: Path, n: int = SLOWEST) -> str:
    rows = slowest_files(junit, n)
    total = sum(float(c.get("time") or 0) for c in ET.parse(junit).getroot().iter("testcase"))
    width = max((len(r[0]) for r in rows), default=4)
    lines = [f"the {len(rows)} slowest test files ({junit.name}; {total:.0f} s of tests in all, summed over workers):"]
    lines += [f"  {name.ljust(width)}  {secs:7.1f} s  {count:4d} tests" for name, secs, count in rows]
    return "\n".join(lines)


def ratio_line(wall: float, reference: float, load: LoadSampler | None) -> str:
    """The run's wall time as a multiple of the reference, beside the goal that fits its load."""
    x = wall / reference
    text = f"{wall:.0f} s = {x:.0f}x import torch._dynamo ({reference:.1f} s)"
    if load is not None and load.samples:
        text += f"; load average {load.mean:.1f} mean, {load.peak:.1f} peak ({len(load.samples)} samples)"
    return text + f"; goals: <= {GOAL_QUIET_X}x quiet, <= {GOAL_LOADED_X}x under load {GOAL_LOAD}"


def timed(command: list[str], cache_dir: str, log: Path | None,
          load: LoadSampler | None = None) -> tuple[float, float, str]:
    """Wall time and machine-wide busy CPU time of ``command`` with the given inductor cache dir, and pass/FAIL
    (``load``: sampled meanwhile)."""
    env = test_env(TORCHINDUCTOR_CACHE_DIR=cache_dir) if cache_dir else test_env()
    cpu_start = busy_cpu_seconds()
    start = time.perf_counter()
    with load or LoadSampler():
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = busy_cpu_seconds() - cpu_start
    if log is not None:
        with log.open("a") as fh:
            where = f"TORCHINDUCTOR_CACHE_DIR={cache_dir} " if cache_dir else ""
            fh.write(f"$ {where}{' '.join(command)}\n{proc.stdout}{proc.stderr}\n")
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


def full_runs(jobs: int, warm_only: bool, log: Path | None, reference: float,
              folder: Path) -> tuple[tuple[str, ...], bool]:
    """The full test command, cold then warm (or once, as it is): its table row and whether it passed;
    prints each run's ratio to the reference and its ten slowest files."""
    runs: list[tuple[str, float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache_dir:
        for kind in (["warm"] if warm_only else ["cold", "warm"]):
            junit = folder / f"junit-{kind}.xml"
            print(f"timing make test ({kind}{'' if warm_only else ' cache'}) ...", file=sys.stderr, flush=True)
            load = LoadSampler()
            wall, cpu, status = timed(full_command(jobs, junit), "" if warm_only else cache_dir, log, load)
            runs.append((kind, wall, cpu, status))
            print(f"\nmake test, {kind}{' (this machine' + chr(39) + 's caches)' if warm_only else ' cache'}: "
                  f"{status}; {ratio_line(wall, reference, load)}")
            if junit.exists():
                print(slowest_table(junit))
    by_kind = {kind: (wall, cpu, status) for kind, wall, cpu, status in runs}
    cold = by_kind.get("cold", (0.0, 0.0, ""))
    warm = by_kind["warm"]
    row = ("make test (full)", f"{cold[0]:.1f} s" if cold[2] else "-", f"{cold[1]:.0f} CPU-s" if cold[2] else "-",
           f"{warm[0]:.1f} s", f"{warm[1]:.0f} CPU-s", next((r[3] for r in runs if r[3] != "pass"), "pass"))
    cores = os.cpu_count() or 1
    print(f"floor on {cores} cores (CPU time / cores, if every core were busy throughout): "
          + ", ".join(f"{kind} {cpu / cores:.0f} s" for kind, _, cpu, _ in runs))
    return row, all(r[3] == "pass" for r in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--only", metavar="PATTERN",
                        help="time only notebooks whose path contains PATTERN; skips the full run")
    parser.add_argument("--full", action="store_true", help="with --only, also time the full test command")
    parser.add_argument("--warm-only", action="store_true",
                        help="one full run with this machine's caches (no cold run), and no notebook alone")
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers for the full run (make test uses 2)")
    parser.add_argument("--junit", type=Path, metavar="FILE",
                        help="print only the slowest test files of this JUnit file (an earlier run's); run nothing")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the full runs' JUnit files in DIR")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    parser.add_argument("--log", type=Path, help="append every command's output to this file")
    args = parser.parse_args(argv)

    if args.junit:
        if not args.junit.is_file():
            print(f"no such JUnit file: {args.junit}", file=sys.stderr)
            return 2
        try:
            print(slowest_table(args.junit))
        except ET.ParseError as exc:
            print(f"{args.junit} is not a JUnit XML file: {exc}", file=sys.stderr)
            return 2
        return 0

    selected = [] if args.warm_only and args.only is None else notebooks(args.only)
    full = args.only is None or args.full
    jobs = [(str(p.relative_to(ROOT)), notebook_command(p)) for p in selected]
    if not (full or jobs) or (args.only is not None and not selected):
        print(f"no notebooks match {args.only!r}", file=sys.stderr)
        return 2

    if args.dry_run:
        if full:
            print(f"make test (full):\n  {' '.join(full_command(args.jobs, Path('junit.xml')))}"
                  + ("   (this machine's caches)" if args.warm_only else
                     "   (TORCHINDUCTOR_CACHE_DIR=<fresh tmp dir>: cold, then warm with the same dir)"))
        for name, command in jobs:
            print(f"{name}:\n  TORCHINDUCTOR_CACHE_DIR=<fresh tmp dir> {' '.join(command)}"
                  "   (cold, then warm with the same dir)")
        return 0

    print("timing the machine: import torch._dynamo in a fresh interpreter ...", file=sys.stderr, flush=True)
    ref_wall, ref_cpu = machine_reference()
    print(f"this machine: {os.cpu_count()} cores; import torch._dynamo takes {ref_wall:.1f} s "
          f"({ref_cpu:.1f} CPU-s), median of 3; load average now {os.getloadavg()[0]:.1f}")
    rows, passed = [], True
    if full:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="bench-junit-") as scratch:
            row, passed = full_runs(args.jobs, args.warm_only, args.log, ref_wall, args.keep or Path(scratch))
        rows.append(row)
        after, _ = machine_reference()
        print(f"import torch._dynamo after the runs: {after:.1f} s (before: {ref_wall:.1f} s)")
    for name, command in jobs:
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        (cold, cold_cpu), (warm, warm_cpu), status = cold_and_warm(command, args.log)
        rows.append((name, f"{cold:.1f} s", f"{cold_cpu:.0f} CPU-s", f"{warm:.1f} s", f"{warm_cpu:.0f} CPU-s", status))
        passed = passed and status == "pass"
    print()
    print(table(rows))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
