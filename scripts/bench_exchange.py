"""Load on the exchange: N simulated students hand in at once, several times each, through a real hub and
its proxy on 127.0.0.1; then every hand-in is checked to be stored exactly once, the counted ones are
collected, and (a subset of) them graded with ``course grade``. Prints figures; asserts no timing.

    .venv/bin/python scripts/bench_exchange.py                      # 40 students x 3 hand-ins, grade 4
    .venv/bin/python scripts/bench_exchange.py --students 10 --rounds 2 --grade 0

Each hand-in's bytes are made unique (the student and round in the notebook's metadata), so a hand-in
stored twice, lost, or filed under another student shows as a wrong sha256. Loops are bounded: each
student makes exactly ``--rounds`` hand-ins. Grading every collected notebook costs minutes of CPU on 2
cores, so by default only ``--grade`` of them are graded (``--grade -1``: all); the figure says how many.
Exit status 1 when anything was lost, doubled or mixed up.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
SAMPLE = ROOT / "tests" / "samples" / "submissions" / "correct__ex02_diagnose.ipynb"


def unique_notebook(base: dict, student: str, round_: int) -> bytes:
    nb = json.loads(json.dumps(base))
    nb.setdefault("metadata", {})["bench"] = f"{student} round {round_}"
    return json.dumps(nb, indent=1).encode()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3, help="hand-ins per student")
    p.add_argument("--grade", type=int, default=4, help="collected notebooks to grade (-1: all)")
    p.add_argument("--port", type=int, default=None, help="hub ports PORT..PORT+3 (127.0.0.1; default: free ones)")
    args = p.parse_args(argv)

    from hubtools import running_hub, skip_reason

    from course_exchange.client import Exchange

    if reason := skip_reason():
        print(f"bench_exchange: cannot start a hub here: {reason}")
        return 2
    base = json.loads(SAMPLE.read_text())
    course = "bench"
    students = [f"bench-s{i:02d}" for i in range(args.students)]
    with tempfile.TemporaryDirectory(prefix="course-bench-") as tmp, \
            running_hub(Path(tmp) / "state", port=args.port) as hub:
        print(f"hub up at {hub.url}; {args.students} students x {args.rounds} hand-ins of ex02")
        hub.add_group(f"course-{course}-students", students)
        hub.add_group(f"course-{course}-instructors", ["bench-prof"])
        tokens = {u: hub.token(u) for u in [*students, "bench-prof"]}
        sent: dict[str, list[str]] = {s: [] for s in students}
        last: dict[str, bytes] = {}
        times: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(len(students))

        def student_run(s: str) -> None:
            ex = Exchange(hub.exchange_url, tokens[s])
            start.wait()                                  # everyone at once
            for r in range(args.rounds):
                data = unique_notebook(base, s, r)
                t = time.perf_counter()
                try:
                    reply = ex.hand_in(course, Path("ex02_diagnose.ipynb"), data)
                except Exception as exc:                  # reported, counted as lost below
                    with lock:
                        failures.append(f"{s} round {r}: {exc}")
                    continue
                took = time.perf_counter() - t
                with lock:
                    times.append(took)
                    sent[s].append(hashlib.sha256(data).hexdigest())
                    last[s] = data
                    if reply["handin"]["student"] != s:
                        failures.append(f"{s} round {r}: stored as {reply['handin']['student']}")

        t0 = time.perf_counter()
        with ThreadPoolExecutor(len(students)) as pool:
            list(pool.map(student_run, students))
        wall = time.perf_counter() - t0

        problems = list(failures)
        for s in students:
            stored = [h["sha256"] for h in Exchange(hub.exchange_url, tokens[s]).my_handins(course)["handins"]]
            if sorted(stored) != sorted(sent[s]) or len(stored) != args.rounds:
                problems.append(f"{s}: sent {len(sent[s])}, stored {len(stored)} (shas differ: "
                                f"{sorted(set(stored) ^ set(sent[s]))[:2]})")
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
        env.update(COURSE_EXCHANGE_URL=hub.exchange_url, JUPYTERHUB_API_TOKEN=tokens["bench-prof"])
        course_cmd = str(Path(sys.executable).parent / "course")
        collected = Path(tmp) / "collected"
        r = subprocess.run([course_cmd, "collect", course, "--to", str(collected)], env=env, capture_output=True,
                           text=True)
        if r.returncode:
            problems.append(f"course collect failed: {r.stderr.strip()}")
        files = sorted(collected.glob("*.ipynb"))
        for s in students:
            f = collected / f"{s}__ex02_diagnose.ipynb"
            if s in last and (not f.exists() or f.read_bytes() != last[s]):
                problems.append(f"{s}: the collected hand-in is not their last one")
        graded_n = len(files) if args.grade < 0 else min(args.grade, len(files))
        graded_ok = None
        if graded_n:
            subset = Path(tmp) / "to-grade"
            subset.mkdir()
            for f in files[:graded_n]:
                (subset / f.name).write_bytes(f.read_bytes())
            out = Path(tmp) / "graded"
            t = time.perf_counter()
            g = subprocess.run([course_cmd, "grade", "run", str(subset), "--out", str(out), "--no-progress"],
                               capture_output=True, text=True)
            grade_s = time.perf_counter() - t
            rows = (out / "grades.csv").read_text().splitlines()[1:] if (out / "grades.csv").exists() else []
            graded_ok = g.returncode == 0 and len(rows) == graded_n
            if not graded_ok:
                problems.append(f"course grade on {graded_n} collected: exit {g.returncode}, {len(rows)} rows\n"
                                f"{g.stderr[-1500:]}")

    n = len(times)
    print(f"hand-ins: {n} of {args.students * args.rounds} in {wall:.1f} s: {n / wall:.1f} hand-ins/s")
    if times:
        print(f"per hand-in: median {statistics.median(times):.2f} s, slowest {max(times):.2f} s")
    print(f"stored exactly once and unmixed: {'yes' if not problems else 'NO'}; collected {len(files)} "
          f"(one per student)")
    if graded_n:
        print(f"graded {graded_n} of {len(files)} collected (a subset: CPU is short; --grade -1 for all) in "
              f"{grade_s:.0f} s: {'every one graded' if graded_ok else 'FAILED'}")
    for line in problems:
        print(f"problem: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
