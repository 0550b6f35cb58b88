"""The stopwatch records the torch thread count of every timed call, and refuses figures taken under different ones;
a "fastest" figure must be the fastest of the steady calls it recorded (no more than a quarter surely faster)."""

from __future__ import annotations

import pytest
import torch

from compile_course.stopwatch import (
    CHANGED_DURING_CALL,
    Stopwatch,
    _windows,
    allowed_faster,
    surely_faster,
    unequal_threads,
    unmeasured,
)


@pytest.fixture
def threads():
    """Leaves torch's thread count as it found it."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def double(x):
    return x * 2


def _timed(watch: Stopwatch, eager_threads: int, compiled_threads: int, x: torch.Tensor) -> dict:
    """What an honest routine measures, with eager and compiled calls under the given thread counts."""
    import time

    def timed(f):
        start = time.perf_counter()
        f(x)
        return time.perf_counter() - start

    with watch.hooked():
        torch.set_num_threads(eager_threads)
        eager_first = timed(watch.stand_in)
        eager_fastest = min(timed(watch.stand_in) for _ in range(6))
        torch.set_num_threads(compiled_threads)
        torch._dynamo.reset()
        compiled = torch.compile(watch.stand_in, backend="eager", fullgraph=True, dynamic=False)
        compiled_first = timed(compiled)
        compiled_fastest = min(timed(compiled) for _ in range(6))
    return {"eager_first_s": eager_first, "eager_fastest_s": eager_fastest, "compiled_first_s": compiled_first,
            "compiled_fastest_s": compiled_fastest}


def test_every_call_records_the_thread_count_it_ran_with(threads):
    watch = Stopwatch(double)
    _timed(watch, 1, 2, torch.ones(8))
    calls = watch.timeline()["calls"]
    assert [c["threads"] for c in calls if c["kind"] == "eager"] == [1] * 7
    assert [c["threads"] for c in calls if c["kind"] == "compiled"] == [2] * 7


def test_eager_starved_of_threads_is_no_comparison(threads):
    # the hostile corpus's adv-starved-eager: eager on one thread, compiled on two, each figure measured
    watch = Stopwatch(double)
    x = torch.ones(8)
    report = _timed(watch, 1, 2, x)
    problems = unmeasured(report, watch.timeline())
    assert problems and "different torch thread counts (1 and 2" in problems[0]
    speedup_only = unmeasured(report, watch.timeline(), figures=("eager_fastest_s", "compiled_fastest_s"))
    assert speedup_only and "thread counts" in speedup_only[0]


def test_the_same_thread_count_throughout_is_a_fair_comparison(threads):
    watch = Stopwatch(double)
    report = _timed(watch, 1, 1, torch.ones(8))
    assert unequal_threads(watch.timeline()["calls"]) is None
    assert not any("thread" in p for p in unmeasured(report, watch.timeline()))


def test_a_thread_count_changed_during_a_call_is_recorded(threads):
    torch.set_num_threads(1)

    def changes_threads(x):
        torch.set_num_threads(2)
        return x

    watch = Stopwatch(changes_threads)
    watch.stand_in(torch.ones(2))
    [call] = watch.timeline()["calls"]
    assert call["threads"] == CHANGED_DURING_CALL
    assert "a count changed during the call" in unequal_threads([call])


def _steady_timeline(durations_ms: list[float], gap_ms: float = 0.01) -> dict:
    """A recorded timeline of eager calls (the first, then the steady ones) of the given own spans, each
    ``gap_ms`` after the last: the stand-in's work, exactly as the record keeps it."""
    calls, t = [], 0.0
    for d in durations_ms:
        enter = t + gap_ms / 1e3
        exit_ = enter + d / 1e3
        calls.append({"kind": "eager", "compile": None, "enter": enter, "start": enter + 1e-6, "end": exit_ - 1e-6,
                      "exit": exit_, "args": [], "keywords": 0, "graphs": 0, "fxgraph_hit": 0, "fxgraph_miss": 0,
                      "threads": 1})
        t = exit_
    return {"calls": calls, "compiles": [], "end": t + gap_ms / 1e3}


def _fastest_problems(figure: float, timeline: dict) -> list[str]:
    """What :func:`unmeasured` says of ``figure`` as the eager fastest figure (these timelines compile nothing)."""
    return [p for p in unmeasured({"eager_fastest_s": figure}, timeline, figures=("eager_fastest_s",))
            if "eager_fastest_s" in p]


def _reading(timeline: dict, i: int, gap_ms: float = 0.01) -> float:
    """What a timer just around call ``i`` read: its span, and half of the gap either side."""
    c = timeline["calls"][i]
    return c["exit"] - c["enter"] + gap_ms / 1e3


def _steady_windows(timeline: dict) -> list[tuple[float, float]]:
    return _windows(timeline["calls"], timeline["end"])[1:]


# 20 steady calls: five fast ones (1.0 ms) first, then fifteen slow ones (1.5 ms), after a 5 ms first call
FIVE_FAST_FIRST = [5.0] + [1.0] * 5 + [1.5] * 15


def test_a_slower_steady_call_is_not_the_fastest():
    # the hostile corpus's adv-slow-call-as-fastest: a figure measured around one steady call, 1.5x the fastest
    # and so within the former 3x rule, but with 15 of the 20 steady calls surely faster than it
    timeline = _steady_timeline([5.0] + [1.0] * 15 + [1.5] * 5)
    slow = _reading(timeline, 20)
    assert surely_faster(slow, _steady_windows(timeline)) == 15
    problems = _fastest_problems(slow, timeline)
    assert problems and "is not the fastest of the steady calls" in problems[0]
    assert "more than a quarter" in problems[0]
    assert not _fastest_problems(_reading(timeline, 3), timeline)


def test_the_fastest_of_the_calls_a_routine_chose_may_leave_a_quarter_of_them_out():
    # honest warm-up: the minimum of the last 15 steady calls, the five left out happening to be the fastest
    timeline = _steady_timeline(FIVE_FAST_FIRST)
    chosen = min(_reading(timeline, i) for i in range(6, 21))
    assert surely_faster(chosen, _steady_windows(timeline)) == 5 == allowed_faster(20)
    assert not _fastest_problems(chosen, timeline)
    # one more fast call left out is more than a quarter of the steady calls
    timeline = _steady_timeline([5.0] + [1.0] * 6 + [1.5] * 14)
    chosen = min(_reading(timeline, i) for i in range(7, 21))
    assert _fastest_problems(chosen, timeline)


def test_a_timer_around_a_call_reads_inside_its_recorded_window():
    # exact, whatever the load: one clock, read by the routine between the stand-in's exit and entry stamps
    import time

    watch = Stopwatch(double)
    x = torch.ones(8)
    readings = []
    for _ in range(12):
        start = time.perf_counter()
        watch.stand_in(x)
        readings.append(time.perf_counter() - start)
    timeline = watch.timeline()
    windows = _windows(timeline["calls"], timeline["end"])
    assert all(own <= reading <= widest for reading, (own, widest) in zip(readings, windows, strict=True))
    # the minimum of every steady call has none surely faster than it
    assert surely_faster(min(readings[1:]), windows[1:]) == 0
    report = {"eager_first_s": readings[0], "eager_fastest_s": min(readings[1:])}
    assert not [p for p in unmeasured(report, timeline) if "eager_" in p]
