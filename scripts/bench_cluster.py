"""Submissions per minute: local grading (--jobs 2) against a 2-worker Dask LocalCluster, same class.

    .venv/bin/python scripts/bench_cluster.py [--copies 4] [--kinds correct unanswered partial]
                                              [--exercises ex01 ex02 ex03 ex04 ex06] [--rounds 1]

The class is the bundled samples of the given kinds and exercises (tests/samples/submissions),
each handed in by ``--copies`` students. Both settings call ``grade_class``, the function behind
``course grade``, on the same class into fresh output folders: locally with ``jobs=2``, then
with ``executor=DaskExecutor(address)`` on a LocalCluster of 2 worker processes with 1 thread
each (started before the clock runs, as a cluster would be already). Printed per setting:

* the whole run: submissions / wall time of ``grade_class`` (sandbox start and warm-up included).
  Every run starts from its own empty warm-up store (``$COURSE_GRADER_STORE``, set on the
  workers too), as the first run of a course version does: one warm-up locally; on the cluster
  the first worker warms up and the other waits for it and copies its entry (one machine);
* the second half: from the attempt recorded in the middle of the run to the last (``graded_at``
  in the gradebook), when every host is warm: grading alone, the same measure in both settings;
* the median wall time of one submission (``attempts.seconds``: feedback run and verdicts);

then the ratios cluster / local (the goal: within 10 %, that is at least 0.90). A third setting,
one worker process with 2 threads, has one host like the local run, so its ratio is Dask's own
overhead; the 2-worker cluster also pays a second sandbox start on the same cores. The gradebooks are
compared too (every row but timings). Figures only: nothing is asserted, and a shared machine
moves them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
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


def make_class(folder: Path, kinds: list[str], exercises: list[str], copies: int) -> int:
    """``copies`` students per sample, one folder each. Returns the number of submissions."""
    n = 0
    for sample in sorted(SAMPLES.glob("*__ex*.ipynb")):
        kind, name = sample.stem.split("__", 1)
        if kind not in kinds or name[:4] not in exercises:
            continue
        for c in range(copies):
            write_distinct(sample, f"{kind}-{c}", folder / f"{kind}-{c}" / f"{name}.ipynb")
            n += 1
    return n


def steady_rate(gradebook: Path) -> tuple[float, float, float]:
    """``(submissions per minute over the second half of the run, that span in s, median s per submission)``.

    The second half starts at the attempt recorded in the middle: by then every host is warm, in
    both settings, so the figure is grading alone, measured the same way (``graded_at``)."""
    with sqlite3.connect(gradebook) as db:
        rows = sorted(db.execute("SELECT graded_at, seconds FROM attempts WHERE status != 'rejected'"))
    times = [t for t, _ in rows]
    mid = len(times) // 2
    span = times[-1] - times[mid] if len(times) > 2 else 0.0
    rate = (len(times) - 1 - mid) / span * 60 if span > 0 else float("nan")
    return rate, span, statistics.median(s for _, s in rows) if rows else float("nan")


def _use_store(path: str) -> None:
    from course_grader.pipeline.cache_store import STORE_ENV

    os.environ[STORE_ENV] = path


def run(label: str, subs: Path, out: Path, store: Path, address: str | None = None, **kwargs) -> dict:
    """One ``grade_class`` run starting from the empty warm-up store ``store`` (here and on the workers)."""
    import distributed

    from course_grader.pipeline.cluster import DaskExecutor
    from course_grader.pipeline.grade_class import grade_class
    from course_grader.results.gradebook import Gradebook

    _use_store(str(store))
    if address is not None:
        with distributed.Client(address, set_as_default=False) as client:
            client.run(_use_store, str(store))
        kwargs["executor"] = DaskExecutor(address)
    t0 = time.perf_counter()
    report = grade_class(subs, out, progress=False, **kwargs)
    wall = time.perf_counter() - t0
    n = len(report.graded)
    steady, span, median = steady_rate(report.gradebook)
    with Gradebook(report.gradebook) as book:
        snapshot = book.snapshot()
        full = sum(r["auto_score"] == r["auto_possible"] > 0 for r in book.current())
    print(f"{label:<26} {n:>5} {wall:>8.1f} {n / wall * 60:>10.1f} {span:>9.1f} {steady:>10.1f} {median:>8.2f}"
          f"   full marks {full}, warm {report.warm_s:.1f} s, replies from the run's cache {report.cached_replies}, "
          f"faults {len(report.faults)}, re-run alone {len(report.retried)}",
          flush=True)
    return {"wall": wall, "n": n, "whole": n / wall * 60, "steady": steady, "snapshot": snapshot}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--copies", type=int, default=4)
    p.add_argument("--kinds", nargs="+", default=["correct", "unanswered", "partial"])
    p.add_argument("--exercises", nargs="+", default=["ex01", "ex02", "ex03", "ex04", "ex06"])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--no-one-worker", dest="one_worker", action="store_false",
                   help="skip the third setting: one worker process with 2 threads")
    args = p.parse_args(argv)
    from course_grader.pipeline.cluster import local_cluster

    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        subs = work / "class"
        n = make_class(subs, args.kinds, args.exercises, args.copies)
        print(f"class: {n} submissions ({', '.join(args.kinds)} of {', '.join(args.exercises)}, "
              f"{args.copies} students each)")
        results = {"local": [], "cluster": [], "one-worker": []}
        with local_cluster(2) as address, local_cluster(1, 2) as one:
            print("LocalClusters: 2 worker processes with 1 thread each; 1 worker process with 2 threads\n")
            print(f"{'setting':<26} {'subs':>5} {'wall s':>8} {'subs/min':>10} {'span s':>9} {'subs/min':>10}"
                  f" {'median':>8}")
            print(f"{'':<26} {'':>5} {'(whole run)':>19} {'(second half)':>20} {'s/sub':>8}")
            for r in range(args.rounds):
                results["local"].append(run(f"local --jobs 2 (round {r + 1})", subs, work / f"local-{r}",
                                            work / f"store-local-{r}", jobs=2))
                results["cluster"].append(run(f"2-worker cluster (round {r + 1})", subs, work / f"cluster-{r}",
                                              work / f"store-cluster-{r}", address))
                if args.one_worker:
                    results["one-worker"].append(run(f"1 worker x 2 threads ({r + 1})", subs, work / f"one-{r}",
                                                     work / f"store-one-{r}", one))
        best = {k: (max(x["whole"] for x in v), max(x["steady"] for x in v)) for k, v in results.items() if v}
        whole, steady = (best["cluster"][i] / best["local"][i] for i in (0, 1))
        print(f"\n2-worker cluster / local, best of {args.rounds} round(s): whole run {whole:.2f}, "
              f"second half {steady:.2f}   (goal: at least 0.90)")
        if args.one_worker:
            whole, steady = (best["one-worker"][i] / best["local"][i] for i in (0, 1))
            print(f"1 worker x 2 threads / local (one host and one warm-up, as locally): whole run {whole:.2f}, "
                  f"second half {steady:.2f}")
        same = all(c["snapshot"] == results["local"][0]["snapshot"]
                   for c in results["cluster"] + results["one-worker"])
        print(f"gradebooks equal to the local run's, row for row (timings aside): {'yes' if same else 'NO'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":   # LocalCluster starts its workers with multiprocessing's spawn
    sys.exit(main())
