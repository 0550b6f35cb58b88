"""Submissions per minute: local grading (--jobs 2) against a 2-worker Dask LocalCluster, same class.

    .venv/bin/python scripts/bench_cluster.py [--copies 2] [--kinds correct unanswered partial]
                                              [--exercises ex01 ex02 ex03 ex04 ex06] [--rounds 1]

The class is the bundled samples of the given kinds and exercises (tests/samples/submissions),
each handed in by ``--copies`` students. Both settings call ``grade_class``, the function behind
``course grade``, on the same class into fresh output folders: locally with ``jobs=2``, then
with ``executor=DaskExecutor(address)`` on a LocalCluster of 2 worker processes with 1 thread
each (started before the clock runs, as a cluster would be already). Printed per setting:

* the whole run: submissions / wall time of ``grade_class`` (sandbox start and warm-up included:
  one host warms locally, each worker warms its own on the cluster);
* after set-up: from the first attempt recorded to the last (``graded_at`` in the gradebook),
  the same measure in both settings;

then the ratios cluster / local (the goal: within 10 %, that is at least 0.90). The two
gradebooks are compared too (every row but timings). Figures only: nothing is asserted, and a
shared machine moves them.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SAMPLES = ROOT / "tests" / "samples" / "submissions"


def make_class(folder: Path, kinds: list[str], exercises: list[str], copies: int) -> int:
    """``copies`` students per sample, one folder each. Returns the number of submissions."""
    n = 0
    for sample in sorted(SAMPLES.glob("*__ex*.ipynb")):
        kind, name = sample.stem.split("__", 1)
        if kind not in kinds or name[:4] not in exercises:
            continue
        for c in range(copies):
            student = folder / f"{kind}-{c}"
            student.mkdir(parents=True, exist_ok=True)
            shutil.copy(sample, student / f"{name}.ipynb")
            n += 1
    return n


def steady_rate(gradebook: Path) -> tuple[float, float]:
    """``(submissions per minute from the first recorded attempt to the last, that span in s)``."""
    with sqlite3.connect(gradebook) as db:
        times = sorted(t for (t,) in db.execute("SELECT graded_at FROM attempts WHERE status != 'rejected'"))
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    return ((len(times) - 1) / span * 60 if span > 0 else float("nan")), span


def run(label: str, subs: Path, out: Path, **kwargs) -> dict:
    from course_grader.gradebook import Gradebook
    from course_grader.orchestrate import grade_class

    t0 = time.perf_counter()
    report = grade_class(subs, out, progress=False, **kwargs)
    wall = time.perf_counter() - t0
    n = len(report.graded)
    steady, span = steady_rate(report.gradebook)
    with Gradebook(report.gradebook) as book:
        snapshot = book.snapshot()
    print(f"{label:<26} {n:>5} {wall:>8.1f} {n / wall * 60:>10.1f} {span:>9.1f} {steady:>10.1f}"
          f"   warm {report.warm_s:.1f} s, faults {len(report.faults)}, re-run alone {len(report.retried)}",
          flush=True)
    return {"wall": wall, "n": n, "whole": n / wall * 60, "steady": steady, "snapshot": snapshot}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--copies", type=int, default=2)
    p.add_argument("--kinds", nargs="+", default=["correct", "unanswered", "partial"])
    p.add_argument("--exercises", nargs="+", default=["ex01", "ex02", "ex03", "ex04", "ex06"])
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args(argv)
    from course_grader.cluster import DaskExecutor, local_cluster

    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        subs = work / "class"
        n = make_class(subs, args.kinds, args.exercises, args.copies)
        print(f"class: {n} submissions ({', '.join(args.kinds)} of {', '.join(args.exercises)}, "
              f"{args.copies} students each)")
        with local_cluster(2) as address:
            print(f"LocalCluster at {address}: 2 worker processes, 1 thread each\n")
            print(f"{'setting':<26} {'subs':>5} {'wall s':>8} {'subs/min':>10} {'steady s':>9} {'subs/min':>10}")
            print(f"{'':<26} {'':>5} {'(whole run)':>19} {'(after set-up)':>20}")
            results = {"local": [], "cluster": []}
            for r in range(args.rounds):
                results["local"].append(run(f"local --jobs 2 (round {r + 1})", subs, work / f"local-{r}", jobs=2))
                results["cluster"].append(run(f"2-worker cluster (round {r + 1})", subs, work / f"cluster-{r}",
                                              executor=DaskExecutor(address)))
        best = {k: (max(x["whole"] for x in v), max(x["steady"] for x in v)) for k, v in results.items()}
        whole, steady = (best["cluster"][i] / best["local"][i] for i in (0, 1))
        print(f"\ncluster / local, best of {args.rounds} round(s): whole run {whole:.2f}, after set-up {steady:.2f}"
              "   (goal: at least 0.90)")
        same = all(c["snapshot"] == results["local"][0]["snapshot"] for c in results["cluster"])
        print(f"gradebooks equal to the local run's, row for row (timings aside): {'yes' if same else 'NO'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":   # LocalCluster starts its workers with multiprocessing's spawn
    sys.exit(main())
