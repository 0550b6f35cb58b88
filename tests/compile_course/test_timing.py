"""measure / TimingTable: first call apart from steady state, cache state, plot."""

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib.figure import Figure

from compile_course.timing import Timing, TimingTable, _cache_state, _fmt, measure, speedup


def test_measure_eager_function():
    x = torch.randn(64)
    t = measure("eager sin", torch.sin, x, min_run_time=0.05)
    assert t.label == "eager sin"
    assert t.cache == "no inductor cache used"
    assert t.first_call_s > 0 and t.median_s > 0 and t.iqr_s >= 0
    assert t.runs >= 1
    assert t.fastest_s <= t.median_s
    assert t.fastest_s < 0.05  # a 64-element sin is microseconds, not the whole budget


def test_measure_separates_first_call_from_steady_state():
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: torch.sin(x) + 1, backend="eager")
    t = measure("compiled (eager backend)", compiled, torch.randn(64), min_run_time=0.05)
    # The first call pays for Dynamo's capture; later calls reuse the graph.
    # The fastest steady call is microseconds, capture tens of milliseconds: the
    # margin is about 1000x, so a 10x claim holds on a loaded machine too.
    assert t.first_call_s > 10 * t.fastest_s
    assert t.cache == "no inductor cache used"  # the eager backend never touches inductor's cache
    torch._dynamo.reset()


def test_cache_state_reads_inductor_counters():
    assert _cache_state({}, {"fxgraph_cache_miss": 1}) == "cold (FX graph cache miss)"
    assert _cache_state({"fxgraph_cache_hit": 2}, {"fxgraph_cache_hit": 3}) == "warm (FX graph cache hit)"
    assert _cache_state({"fxgraph_cache_hit": 2}, {"fxgraph_cache_hit": 2}) == "no inductor cache used"


def test_fmt_units():
    assert _fmt(2.5) == "2.5 s"
    assert _fmt(0.0123) == "12.3 ms"
    assert _fmt(4.56e-6) == "4.56 us"
    assert _fmt(7e-9) == "7 ns"


def table():
    return TimingTable([
        Timing("eager", 0.002, 0.001, 0.0001, 100, "no inductor cache used", fastest_s=0.0009),
        Timing("compiled", 3.0, 0.00025, 0.00001, 400, "cold (FX graph cache miss)", fastest_s=0.0002),
    ])


def test_timing_table_str():
    lines = str(table()).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("eager ") and "first call      2 ms" in lines[0]
    assert "cache: no inductor cache used" in lines[0]
    assert "fastest    200 us   steady median    250 us (IQR 10 us, 400 runs)" in lines[1]
    assert "fastest" not in Timing("old row", 1.0, 1.0, 0.0, 1, "-").line()
    assert str(table()) == str(table())


def test_speedup_is_fastest_steady_call_over_fastest_steady_call():
    eager, compiled = table().rows
    # Medians would give 4.0; the course's definition uses the fastest calls: 0.9 ms / 0.2 ms.
    assert speedup(eager, compiled) == pytest.approx(4.5)
    assert table().speedup("compiled", "eager") == pytest.approx(4.5)
    assert table().speedup("eager", "compiled") == pytest.approx(1 / 4.5)
    with pytest.raises(ValueError):
        speedup(Timing("old", 1.0, 1.0, 0.0, 1, "-"), compiled)
    with pytest.raises(KeyError):
        table().speedup("missing", "eager")


def test_plot_returns_a_figure():
    import matplotlib.pyplot as plt

    fig = table().plot(title="demo")
    try:
        assert isinstance(fig, Figure)
        ax = fig.axes[0]
        assert ax.get_yscale() == "log"
        assert ax.get_title() == "demo"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["eager", "compiled"]
        heights = sorted(p.get_height() for p in ax.patches)
        assert heights == sorted([0.002, 0.001, 3.0, 0.00025])
        markers = [line for line in ax.get_lines() if line.get_marker() == "_"]
        assert list(markers[0].get_ydata()) == [0.0009, 0.0002]
    finally:
        plt.close(fig)


INDUCTOR_SCRIPT = """
import torch
from compile_course import measure, start
start()
def f(x):
    return torch.sin(x) * 2 + 1
x = torch.randn(32)
print(measure("cold", torch.compile(f), x, min_run_time=0.01).cache)
torch._dynamo.reset()
print(measure("warm", torch.compile(f), x, min_run_time=0.01).cache)
"""


def test_inductor_cache_cold_then_warm(tmp_path, seed_compiled_kernels):
    """The one inductor test: a new cache dir (no graphs) misses, the same dir then hits; stderr stays empty."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(seed_compiled_kernels(tmp_path / "inductor")))
    proc = subprocess.run([sys.executable, "-c", INDUCTOR_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == ["cold (FX graph cache miss)", "warm (FX graph cache hit)"]
    assert proc.stderr == ""  # no "No CUDA runtime is found" from the C++ build on a CPU-only machine


def test_fastest_interleaved_orders_a_slow_and_a_fast_function():
    import time as _time

    from compile_course.timing import fastest_interleaved

    best = fastest_interleaved({"slow": lambda: _time.sleep(0.002), "fast": lambda: None}, rounds=5)
    assert set(best) == {"slow", "fast"}
    assert best["slow"] >= 0.002 > best["fast"] >= 0.0
