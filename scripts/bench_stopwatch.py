"""Print how an honest timing routine's fastest figures sit among the calls the stopwatch recorded.

    .venv/bin/python scripts/bench_stopwatch.py [--runs N] [--hogs K]

``compile_course.stopwatch`` accepts a reported fastest steady call when it was measured around one of
those calls and at most ``FASTER_SHARE`` of them are *surely faster* than it: their whole window (from
the end of the call before to the start of the call after, which bounds any timer around them) ends
below the figure. The fastest of all steady calls has none surely faster, whatever the load; a
routine that left calls out of its minimum can have only those. This runs ex05's answers the way
grading does (``time_and_record`` three times: inductor, inductor again, eager; one torch thread; each
time a fresh stopwatch) ``N`` times with ``K`` busy-looping processes beside it: the bundled honest
ones (the model answer, the samples' honest-perf-counter-ns, the hostile corpus's
honest-compiler-reset), two honest routines that leave calls out of the minimum (five untimed warm-up
calls before 15 timed ones; 20 timed, the first five dropped), and the hostile corpus's
adv-slow-call-as-fastest. For each routine and figure it prints the surely faster calls (worst, and
their allowance), the figure over the fastest call's own span (the former 3x rule's ratio), the most a
figure may be and pass, over the same (the window of the call ranked just above the allowance), and
how far a timer can read above a call's own span (the window's slack). Nothing is asserted;
figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# honest, leaving some steady calls out of the minimum (the attack's own routine is read from the corpus)
_HEAD = '''\
def time_and_record(fn, x, backend):
    import time

    def timed(f):
        start = time.perf_counter()
        f(x)
        return time.perf_counter() - start
    eager_first = timed(fn)
'''
_TAIL = '''\
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)
    compiled_first = timed(compiled)
'''
_REPORT = '''\
    return {"eager_first_s": eager_first, "eager_fastest_s": eager_fastest,
            "compiled_first_s": compiled_first, "compiled_fastest_s": compiled_fastest}
'''
UNTIMED_WARMUP = (_HEAD + "    for _ in range(5):\n        fn(x)\n"
                  "    eager_fastest = min(timed(fn) for _ in range(15))\n" + _TAIL
                  + "    for _ in range(5):\n        compiled(x)\n"
                  "    compiled_fastest = min(timed(compiled) for _ in range(15))\n" + _REPORT)
DROP_FIRST_QUARTER = (_HEAD + "    eager_fastest = min([timed(fn) for _ in range(20)][5:])\n" + _TAIL
                      + "    compiled_fastest = min([timed(compiled) for _ in range(20)][5:])\n" + _REPORT)


def _cell(notebook: Path, cell_id: str) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if c["metadata"].get("course", {}).get("id") == cell_id)
    return "\n".join(line for line in source.split("\n") if "### " not in line)


def routines() -> dict[str, str]:
    ex05 = "__ex05_timing_boundary.ipynb"
    return {"model answer": _cell(ROOT / "solutions/ex05_timing_boundary.ipynb", "ex05-answer"),
            "honest-perf-counter-ns": _cell(ROOT / f"tests/samples/submissions/honest-perf-counter-ns{ex05}",
                                            "ex05-answer"),
            "honest-compiler-reset": _cell(ROOT / f"tests/hostile/submissions/honest-compiler-reset{ex05}",
                                           "ex05-answer"),
            "5 untimed warm-up + 15": UNTIMED_WARMUP,
            "20, first 5 dropped": DROP_FIRST_QUARTER,
            "adv-slow-call-as-fastest": _cell(ROOT / f"tests/hostile/submissions/adv-slow-call-as-fastest{ex05}",
                                              "ex05-answer")}


def _hog(stop) -> None:
    while not stop.is_set():
        pass


def _one_run(name: str, source: str) -> list[dict]:
    import torch

    from compile_course.stopwatch import CLOCK_SLACK_S, Stopwatch, _windows, allowed_faster, hooked

    def fused(x):
        return torch.sin(x) * torch.cos(x) + 0.5 * torch.tanh(x)

    x = torch.randn(256, 1024)
    ns = {"torch": torch}
    exec(compile(source, name, "exec"), ns)  # noqa: S102 - the course's own answers and samples
    out = []
    for backend in ("inductor", "inductor", "eager"):
        watch = Stopwatch(fused)
        with hooked([watch]):
            report = ns["time_and_record"](watch.stand_in, x, backend)
        timeline = watch.timeline()
        windows = dict(zip(map(id, timeline["calls"]), _windows(timeline["calls"], timeline["end"]), strict=True))
        for kind in ("eager", "compiled"):
            steady = [windows[id(c)] for c in timeline["calls"] if c["kind"] == kind][1:]
            figure = report[f"{kind}_fastest_s"]
            own = min(d for d, _ in steady)
            highest = sorted(w for _, w in steady)[allowed_faster(len(steady))]   # the most the rule lets pass
            out.append({"kind": kind, "steady": len(steady), "ratio": figure / own, "loosest": highest / own,
                        "faster": sum(w + CLOCK_SLACK_S < figure for _, w in steady),
                        "slack_us": [(w - d) * 1e6 for d, w in steady]})
    return out


def main() -> None:
    import torch

    from compile_course.stopwatch import allowed_faster

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--hogs", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(1)
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=_hog, args=(stop,), daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    results: dict[str, list[dict]] = {name: [] for name in routines()}
    try:
        for _ in range(args.runs):
            for name, source in routines().items():
                results[name] += _one_run(name, source)
    finally:
        stop.set()
        for h in hogs:
            h.join(5)
            if h.is_alive():
                h.kill()
    for name, rows in results.items():
        for kind in ("eager", "compiled"):
            mine = [r for r in rows if r["kind"] == kind]
            ratios = [r["ratio"] for r in mine]
            slack = [s for r in mine for s in r["slack_us"]]
            faster = [r["faster"] for r in mine]
            refused = sum(r["faster"] > allowed_faster(r["steady"]) for r in mine)
            print(f"{name:25} {kind:8} surely faster calls: worst {max(faster)}, mean {statistics.mean(faster):.1f} "
                  f"(allowed {allowed_faster(mine[0]['steady'])} of {mine[0]['steady']}; refused {refused}/{len(mine)})"
                  f"  figure/fastest own: median {statistics.median(ratios):.3f} worst {max(ratios):.3f}"
                  f"  most the rule passes: median {statistics.median(r['loosest'] for r in mine):.3f} "
                  f"worst {max(r['loosest'] for r in mine):.3f}"
                  f"  window slack us: median {statistics.median(slack):.0f} max {max(slack):.0f}")


if __name__ == "__main__":
    main()
