"""Print how far an honest timing routine's fastest figure lies from the stopwatch's own fastest call.

    .venv/bin/python scripts/bench_stopwatch.py [--runs N] [--hogs K]

``compile_course.stopwatch`` accepts a reported fastest steady call up to ``FASTEST_FACTOR`` times the
fastest call's own duration (as the course's code measured it around the call). This runs the model
answer's way of timing (``time.perf_counter`` around each call, 20 steady calls, eager and compiled with
inductor) ``N`` times with ``K`` busy-looping processes beside it, and prints the ratios: the factor must
stay above the worst. Whether each figure also lies inside a call's window (exact, load-free) is printed
too. Nothing is asserted; figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time


def _hog(stop) -> None:
    while not stop.is_set():
        pass


def _one_run() -> list[tuple[str, float, bool]]:
    import torch

    from compile_course.stopwatch import Stopwatch, _windows

    def fused(x):
        return torch.sin(x) * torch.cos(x) + 0.5 * torch.tanh(x)

    x = torch.randn(256, 1024)
    watch = Stopwatch(fused)
    fn = watch.stand_in

    def timed(f):
        start = time.perf_counter()
        f(x)
        return time.perf_counter() - start

    with watch.hooked():
        timed(fn)
        eager = min(timed(fn) for _ in range(20))
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=False)
        timed(compiled)
        fastest = min(timed(compiled) for _ in range(20))
    timeline = watch.timeline()
    out = []
    for kind, figure in (("eager", eager), ("compiled", fastest)):
        calls = [c for c in timeline["calls"] if c["kind"] == kind]
        windows = dict(zip(map(id, timeline["calls"]), _windows(timeline["calls"], timeline["end"]), strict=True))
        steady = [windows[id(c)] for c in calls[1:]]
        own = min(d for d, _ in steady)
        inside = any(d - 2e-6 <= figure <= w + 2e-6 for d, w in steady)
        out.append((kind, figure / own, inside))
    return out


def main() -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--hogs", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(1)
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=_hog, args=(stop,), daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    try:
        results = [r for _ in range(args.runs) for r in _one_run()]
    finally:
        stop.set()
        for h in hogs:
            h.join(5)
            if h.is_alive():
                h.kill()
    for kind in ("eager", "compiled"):
        ratios = [r for k, r, _ in results if k == kind]
        inside = sum(i for k, _, i in results if k == kind)
        print(f"{kind:9} fastest figure / fastest own call: median {statistics.median(ratios):.3f}  "
              f"worst {max(ratios):.3f}   inside a call's window: {inside}/{len(ratios)}")


if __name__ == "__main__":
    main()
