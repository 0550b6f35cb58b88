"""Time the first call apart from steady state, and say which compile cache was used.

The first call of a compiled function pays for graph capture and, with
inductor, code generation; later calls reuse the cached graph. Mixing the two
in one average says nothing true about either. ``measure`` times the first
call once, then the steady state with ``torch.utils.benchmark`` (median and
interquartile range over many runs), and records whether inductor's FX graph
cache was hit (warm) or missed (cold) during that first call.

Speedup, as the lessons and exercise 5 define it, is plain eager's fastest
steady call divided by the compiled function's fastest steady call
(``speedup(eager, compiled)``). The fastest call is the one least disturbed by
other processes; a median can swing by an order of magnitude on a busy machine.

Raw timings vary from run to run, and so does every boolean, rank or ratio
computed from them. Show them, and what you conclude from them, in cells that
nbval does not compare (tagged ``nbval-ignore-output`` and ``volatile``), as a
plot or a table. What a compared cell may say about timing is what is always
true, such as "the first call includes capture and compilation".
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

from . import quiet  # noqa: F401  (stderr policy before torch is imported)

# isort: split
import torch
import torch.utils.benchmark as benchmark
from torch._dynamo.utils import counters


@dataclass
class Timing:
    label: str
    first_call_s: float
    median_s: float
    iqr_s: float
    runs: int
    cache: str
    p25_s: float | None = None
    p75_s: float | None = None
    fastest_s: float | None = None  # the best steady run: least disturbed by other processes

    def line(self) -> str:
        fastest = f"fastest {_fmt(self.fastest_s):>9}   " if self.fastest_s is not None else ""
        return (f"{self.label:<22} first call {_fmt(self.first_call_s):>9}   {fastest}"
                f"steady median {_fmt(self.median_s):>9} (IQR {_fmt(self.iqr_s)}, {self.runs} runs)"
                f"   cache: {self.cache}")


def speedup(eager: Timing, compiled: Timing) -> float:
    """The course's speedup: eager's fastest steady call over the compiled one's.

    Above 1 the compiled function is faster. First calls are left out on
    purpose: they include capture and compilation, which are paid once.
    """
    if eager.fastest_s is None or compiled.fastest_s is None:
        raise ValueError("speedup needs the fastest steady call of both (measure() records it)")
    return eager.fastest_s / compiled.fastest_s


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _cache_state(before: dict, after: dict) -> str:
    hits = after.get("fxgraph_cache_hit", 0) - before.get("fxgraph_cache_hit", 0)
    misses = after.get("fxgraph_cache_miss", 0) - before.get("fxgraph_cache_miss", 0)
    if misses:
        return "cold (FX graph cache miss)"
    if hits:
        return "warm (FX graph cache hit)"
    return "no inductor cache used"


def measure(label: str, fn, *args, min_run_time: float = 0.5) -> Timing:
    """Time ``fn(*args)``: its first call alone, then the steady state.

    Pass a freshly compiled function (or a plain one, for eager): the first
    call is only meaningful if nothing has called it yet. ``$COURSE_TIMING_SCALE``
    (the test command sets 0.1) scales ``min_run_time``: the course's tests run every
    timing cell, whose output is volatile and never compared, with shorter samples.
    """
    min_run_time *= float(os.environ.get("COURSE_TIMING_SCALE") or 1)
    before = dict(counters["inductor"])
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    cache = _cache_state(before, dict(counters["inductor"]))
    timer = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args}, num_threads=torch.get_num_threads())
    m = timer.blocked_autorange(min_run_time=min_run_time)
    times = sorted(m.times)
    p25, p75 = (statistics.quantiles(times, n=4)[0::2] if len(times) > 1 else (times[0], times[0]))
    return Timing(label, first, m.median, m.iqr, len(m.times) * m.number_per_run, cache, p25, p75, times[0])


def fastest_interleaved(fns: dict, *args, rounds: int = 15) -> dict[str, float]:
    """Best steady-state time of each (already warm) function, timed in alternation.

    Timing A for half a second and then B compares A's quiet spell with B's busy
    one whenever something else runs on the machine. Alternating the calls lets
    a busy spell hit every candidate alike, and the best of ``rounds`` calls is
    the least disturbed figure. It is still a timing: whatever is concluded
    from it belongs in a volatile cell, like every other timing.
    """
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(*args)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


@dataclass
class TimingTable:
    """Several ``Timing`` rows, printable and plottable."""

    rows: list[Timing]

    def __str__(self) -> str:
        return "\n".join(r.line() for r in self.rows)

    def speedup(self, fast: str, slow: str) -> float:
        """``speedup(slow, fast)`` by row label: ``slow``'s fastest steady call over ``fast``'s."""
        by = {r.label: r for r in self.rows}
        return speedup(by[slow], by[fast])

    def plot(self, title: str = "first call vs steady state"):
        """Bar chart (log scale) of first-call time next to steady-state median."""
        import matplotlib.pyplot as plt

        labels = [r.label for r in self.rows]
        xs = range(len(labels))
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.bar([x - 0.2 for x in xs], [r.first_call_s for r in self.rows], width=0.4,
               label="first call (includes capture and compile, if any)")
        # Whiskers span the 25th to 75th percentile, which stays readable on a log axis.
        low = [r.median_s - (r.p25_s if r.p25_s is not None else r.median_s) for r in self.rows]
        high = [(r.p75_s if r.p75_s is not None else r.median_s) - r.median_s for r in self.rows]
        ax.bar([x + 0.2 for x in xs], [r.median_s for r in self.rows], width=0.4,
               yerr=[low, high], label="steady-state median (25th-75th percentile)")
        fastest = [(x + 0.2, r.fastest_s) for x, r in zip(xs, self.rows, strict=True) if r.fastest_s is not None]
        if fastest:
            ax.plot(*zip(*fastest, strict=True), linestyle="none", marker="_", markersize=18, color="black",
                    label="fastest steady call (used for speedup)")
        ax.set_yscale("log")
        ax.set_ylabel("seconds (log scale)")
        ax.set_xticks(list(xs), labels)
        ax.set_title(title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        return fig
