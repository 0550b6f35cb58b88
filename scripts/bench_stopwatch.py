"""Print how honest timing routines' figures sit among the calls the stopwatch recorded, and which reports it refuses.

    .venv/bin/python scripts/bench_stopwatch.py [--runs N] [--hogs K]

``compile_course.stopwatch`` accepts a reported figure for a call when it lies between the call's own span
(the stand-in's entry to its exit) and the most a timer around it may read: that span times ``SPAN_FACTOR``
plus ``SPAN_ALLOWANCE_S`` (the timer's own work and moments the machine ran something else), within the gap
between the calls before and after it. A fastest figure is refused when more than ``FASTER_SHARE`` of the
steady calls are *surely faster*: the most a timer around them may read is below it. This runs ex05's answers
the way grading does (``time_and_record`` three times: inductor, inductor again, eager; one torch thread; each
time a fresh stopwatch told the routine's arguments) ``N`` times with ``K`` busy-looping processes beside it:
the bundled honest ones (the model answer, the samples' honest-perf-counter-ns, the hostile corpus's
honest-compiler-reset), honest routines that time x.clone() or leave calls out of the minimum (five untimed
warm-up calls before 15 timed ones; 20 timed, the first five dropped; 20 untimed before 5 timed, which leaves
out more than a quarter), and the hostile corpus's ex05 attacks on the figures. For each routine it prints the
reports :func:`~compile_course.stopwatch.unmeasured` refused (and why, shortened), and for each figure how far
it lies above the own span of the call it names: the excess in microseconds and the ratio (the first call;
for a fastest figure the slowest steady call whose own span is under it), the surely faster calls, and the
most a timer may read over the call's span. Nothing is asserted; figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# honest, leaving some steady calls out of the minimum (the attacks' own routines are read from the corpus)
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
LONG_WARMUP = (_HEAD + "    for _ in range(20):\n        fn(x)\n"
               "    eager_fastest = min(timed(fn) for _ in range(5))\n" + _TAIL
               + "    for _ in range(20):\n        compiled(x)\n"
               "    compiled_fastest = min(timed(compiled) for _ in range(5))\n" + _REPORT)
ON_A_CLONE = (_HEAD.replace("    import time\n", "    import time\n    x = x.clone()\n")
              + "    eager_fastest = min(timed(fn) for _ in range(20))\n" + _TAIL
              + "    compiled_fastest = min(timed(compiled) for _ in range(20))\n" + _REPORT)
HONEST = ("model answer", "honest-perf-counter-ns", "honest-compiler-reset", "on x.clone()", "5 untimed warm-up + 15",
          "20, first 5 dropped")


def _cell(notebook: Path, cell_id: str) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if c["metadata"].get("course", {}).get("id") == cell_id)
    return "\n".join(line for line in source.split("\n") if "### " not in line)


def routines() -> dict[str, str]:
    ex05 = "__ex05_timing_boundary.ipynb"

    def hostile(name: str) -> str:
        return _cell(ROOT / f"tests/hostile/submissions/{name}{ex05}", "ex05-answer")

    return {"model answer": _cell(ROOT / "solutions/ex05_timing_boundary.ipynb", "ex05-answer"),
            "honest-perf-counter-ns": _cell(ROOT / f"tests/samples/submissions/honest-perf-counter-ns{ex05}",
                                            "ex05-answer"),
            "honest-compiler-reset": hostile("honest-compiler-reset"),
            "on x.clone()": ON_A_CLONE,
            "5 untimed warm-up + 15": UNTIMED_WARMUP,
            "20, first 5 dropped": DROP_FIRST_QUARTER,
            "20 untimed warm-up + 5": LONG_WARMUP,
            **{name: hostile(name) for name in ("adv-slow-call-as-fastest", "adv-sleep-inside-timer",
                                                "adv-slow-values", "adv-raising-compiled-calls")}}


def _hog(stop) -> None:
    while not stop.is_set():
        pass


def _one_run(name: str, source: str, x) -> list[dict]:
    import time

    import torch

    from compile_course.measurement.spy import describe_arg
    from compile_course.stopwatch import CLOCK_SLACK_S, Stopwatch, hooked, surely_faster, unmeasured
    from compile_course.stopwatch.rules import _windows

    def fused(x):
        return torch.sin(x) * torch.cos(x) + 0.5 * torch.tanh(x)

    ns = {"torch": torch, "time": time}
    exec(compile(source, name, "exec"), ns)  # noqa: S102 - the course's own answers and samples
    out = []
    for backend in ("inductor", "inductor", "eager"):
        torch.compiler.set_stance("default")
        torch.set_grad_enabled(True)
        watch = Stopwatch(fused)
        with hooked([watch], (watch.stand_in, x, backend)):
            report = ns["time_and_record"](watch.stand_in, x, backend)
        timeline = watch.timeline()
        problems = unmeasured(report, timeline, [describe_arg(x)])
        windows = dict(zip(map(id, timeline["calls"]), _windows(timeline["calls"], timeline["end"]), strict=True))
        row = {"problems": [p.split(":")[0][:60] + ": " + p.split(":", 1)[-1][:70] for p in problems], "figures": []}
        for kind in ("eager", "compiled"):
            mine = [windows[id(c)] for c in timeline["calls"] if c["kind"] == kind]
            if len(mine) < 2:
                continue
            for label, first in ((f"{kind}_first_s", True), (f"{kind}_fastest_s", False)):
                figure = report[label]
                ws = mine[:1] if first else mine[1:]
                under = [w for w in ws if w[0] <= figure + CLOCK_SLACK_S]
                if not under:
                    continue
                own, most, gap = max(under)
                row["figures"].append({"label": label, "excess_us": (figure - own) * 1e6, "ratio": figure / own,
                                       "most_ratio": most / own,
                                       "faster": None if first else surely_faster(figure, ws),
                                       "faster_gap": None if first else sum(g + CLOCK_SLACK_S < figure
                                                                            for _, _, g in ws),
                                       "steady": len(ws)})
        out.append(row)
    return out


def main() -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--hogs", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(256, 1024)
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=_hog, args=(stop,), daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    results: dict[str, list[dict]] = {name: [] for name in routines()}
    try:
        for _ in range(args.runs):
            for name, source in routines().items():
                results[name] += _one_run(name, source, x)
    finally:
        stop.set()
        for h in hogs:
            h.join(5)
            if h.is_alive():
                h.kill()
    from compile_course.stopwatch import SPAN_ALLOWANCE_S, SPAN_FACTOR

    print(f"SPAN_FACTOR {SPAN_FACTOR}, SPAN_ALLOWANCE_S {SPAN_ALLOWANCE_S * 1e6:.0f} us; {args.runs} runs x 3 reports, "
          f"{args.hogs} hogs")
    for name, rows in results.items():
        refused = [r for r in rows if r["problems"]]
        why = collections.Counter(p for r in refused for p in r["problems"])
        print(f"\n{name}: refused {len(refused)}/{len(rows)} reports"
              + "".join(f"\n    {n} x {p}" for p, n in why.most_common(4)))
        for label in ("eager_first_s", "eager_fastest_s", "compiled_first_s", "compiled_fastest_s"):
            mine = [f for r in rows for f in r["figures"] if f["label"] == label]
            if not mine:
                continue
            excess = [f["excess_us"] for f in mine]
            ratio = [f["ratio"] for f in mine]
            line = (f"    {label:19} over its call's own span: median {statistics.median(excess):8.1f} us, worst "
                    f"{max(excess):9.1f} us; ratio median {statistics.median(ratio):.4f} worst {max(ratio):.4f}; "
                    f"most read / span median {statistics.median(f['most_ratio'] for f in mine):.3f}")
            if mine[0]["faster"] is not None:
                line += (f"; surely faster worst {max(f['faster'] for f in mine)} of {mine[0]['steady']} (by the gaps "
                         f"alone {max(f['faster_gap'] for f in mine)})")
            print(line)
    honest = [r for name in HONEST for r in results[name]]
    worst = max((f["ratio"] for r in honest for f in r["figures"]), default=0)
    print(f"\nhonest routines ({', '.join(HONEST)}): refused {sum(bool(r['problems']) for r in honest)}/{len(honest)} "
          f"reports; figure / own span worst {worst:.4f}")


if __name__ == "__main__":
    main()
