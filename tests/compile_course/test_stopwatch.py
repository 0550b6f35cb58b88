"""The stopwatch records the torch thread count of every timed call, and refuses figures taken under different ones;
a "fastest" figure must be the fastest of the steady calls it recorded (no more than a quarter surely faster)."""

from __future__ import annotations

import pytest
import torch

from compile_course.stopwatch import (
    CHANGED_DURING_CALL,
    FIRST_ALLOWANCE_S,
    Stopwatch,
    allowed_faster,
    surely_faster,
    unequal_threads,
    unmeasured,
)
from compile_course.stopwatch.rules import _windows


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
                      "threads": 1, "grad": True, "given": True, "raised": None})
        t = exit_
    return {"calls": calls, "compiles": [], "end": t + gap_ms / 1e3}


def _eager_problems(report: dict, timeline: dict, expected_args: list | None = None) -> list[str]:
    """What :func:`unmeasured` says of an eager-only timeline's report (these timelines compile nothing)."""
    return [p for p in unmeasured(report, timeline, expected_args, figures=tuple(report))
            if "never called through torch.compile" not in p]


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
    assert all(own <= reading <= gap for reading, (own, _, gap) in zip(readings, windows, strict=True))
    # the minimum of every steady call has none surely faster than it
    assert surely_faster(min(readings[1:]), windows[1:]) == 0
    report = {"eager_first_s": readings[0], "eager_fastest_s": min(readings[1:])}
    assert not [p for p in unmeasured(report, timeline) if "eager_" in p]


# ---- a figure is explained by its call's own span, not by whatever the routine ran between calls (adv2 sleepgap)

def test_a_figure_padded_inside_the_timer_is_refused_though_it_fits_the_gap():
    # every timer held a 20 ms sleep before its call: the figures fit the gaps around the calls (the former bound,
    # which passed them: none surely faster either), but not the calls' own spans and a timer's own work
    timeline = _steady_timeline([5.0] + [1.0] * 20, gap_ms=20.0)
    padded = min(_reading(timeline, i, gap_ms=40.0) for i in range(1, 21))   # own span + the sleep (+ the gap's rest)
    windows = _steady_windows(timeline)
    assert any(own <= padded <= gap for own, _, gap in windows)
    problems = _fastest_problems(padded, timeline)
    assert problems and "your timer held other work besides the call" in problems[0]
    assert "start the clock just before the call" in problems[0]
    # a first figure is one reading, which an interrupted gap may lengthen: it may be FIRST_ALLOWANCE_S over
    assert not _eager_problems({"eager_first_s": _reading(timeline, 0, gap_ms=40.0)}, timeline)
    slept = _steady_timeline([5.0] + [1.0] * 20, gap_ms=200.0)
    first = _eager_problems({"eager_first_s": _reading(slept, 0, gap_ms=400.0)}, slept)
    assert first and "your timer held other work" in first[0]
    # the same calls timed honestly (the routine slept between its timers, not inside them) keep their figures
    assert not _fastest_problems(min(_reading(timeline, i) for i in range(1, 21)), timeline)
    assert not _eager_problems({"eager_first_s": _reading(timeline, 0)}, timeline)


def test_surely_faster_counts_own_spans_not_the_gaps():
    # fifteen fast calls (1 ms) sit in wide gaps (20 ms of other work around each): a 2 ms figure is slower
    # than all of them whatever was run between them; the gap alone counted none
    timeline = _steady_timeline([5.0] + [1.0] * 15 + [2.0] * 5, gap_ms=20.0)
    slow = _reading(timeline, 20)
    assert surely_faster(slow, _steady_windows(timeline)) == 15
    assert sum(gap < slow for _, _, gap in _steady_windows(timeline)) == 0
    assert "more than a quarter" in _fastest_problems(slow, timeline)[0]


def test_a_real_timer_padded_with_a_sleep_is_refused_and_an_honest_one_is_not():
    import time

    def report(pad: float) -> tuple[dict, dict]:
        watch = Stopwatch(double)
        x = torch.ones(8)

        def timed(sleep: float) -> float:
            start = time.perf_counter()
            if sleep:
                time.sleep(sleep)
            watch.stand_in(x)
            return time.perf_counter() - start

        # the first call padded beyond what a single reading may hold over its span (FIRST_ALLOWANCE_S)
        first = timed(pad and FIRST_ALLOWANCE_S * 2)
        readings = [timed(pad) for _ in range(7)]
        return {"eager_first_s": first, "eager_fastest_s": min(readings)}, watch.timeline()

    assert not _eager_problems(*report(0.0))
    problems = _eager_problems(*report(0.005))
    assert len(problems) == 2 and all("your timer held other work" in p for p in problems), problems


# ---- every call is made on the tensor the routine was given, as given (adv2 values)

def _watch_given(x: torch.Tensor, fn=double) -> Stopwatch:
    watch = Stopwatch(fn)
    with watch.hooked(given=(watch.stand_in, x, "eager")):   # as the harness tells it, before the routine runs
        pass
    return watch


def _given(watch: Stopwatch) -> list:
    return [c["given"] for c in watch.timeline()["calls"]]


def test_calls_on_x_or_an_unchanged_copy_of_it_are_on_the_given_values():
    x = torch.randn(64, 32)
    watch = _watch_given(x)
    watch.stand_in(x)
    watch.stand_in(x.clone())     # an honest copy: equal values, not written since
    watch.stand_in(x.detach())    # x's own memory
    assert _given(watch) == [True, True, True]


def test_calls_on_other_values_of_x_s_form_are_refused():
    from compile_course.measurement.spy import describe_arg

    x = torch.randn(64, 32)
    watch = _watch_given(x)
    watch.stand_in(x)
    slow = x * float("inf")       # x's dtype, shape and contiguity: describe_arg cannot tell
    watch.stand_in(slow)
    assert describe_arg(slow) == describe_arg(x)
    assert _given(watch) == [True, False]
    problems = _eager_problems({}, watch.timeline(), [describe_arg(x)])
    assert problems == ["the function you were given was called on other values than x's (a tensor of x's dtype and "
                        "shape, but not x), or x was changed while your function ran: time it on x itself (or "
                        "x.clone()), and leave x as it was given"]


@pytest.mark.parametrize("change", [
    lambda x: x.mul_(2.0),                      # counted by x's version
    lambda x: x.data.mul_(2.0),                 # not counted, but x's values differ afterwards
])
def test_x_changed_by_the_routine_refuses_every_call(change):
    x = torch.randn(64, 32)
    watch = _watch_given(x)
    watch.stand_in(x)
    watch.stand_in(x)
    change(x)                                   # after the last call
    assert _given(watch) == [False, False]


def test_x_changed_for_a_call_and_put_back_refuses_every_call():
    x = torch.randn(64, 32)
    saved = x.clone()
    watch = _watch_given(x)
    watch.stand_in(x)
    x.mul_(float("inf"))
    watch.stand_in(x)
    x.copy_(saved)                              # x's values as given again, its version not
    assert torch.equal(x, saved)
    assert _given(watch) == [False, False]      # the routine changed what it was given: no call counts


@pytest.mark.parametrize("share", [1.0, 0.1])
def test_a_write_that_x_s_version_does_not_count_shows_in_the_sampled_places(share):
    # measured code cannot write behind x's version counter (the allow-list: .data, .numpy(), set_, copy.copy ...);
    # if a way were found, the elements each call samples at random places still see the change
    x = torch.randn(256, 1024)
    saved = x.clone()
    watch = _watch_given(x)
    watch.stand_in(x)
    hidden = x.data.view(-1)                    # x's memory, its own version counter
    changed = torch.rand(hidden.numel(), generator=torch.Generator().manual_seed(0)) < share
    hidden[changed] = float("inf")
    watch.stand_in(x)
    hidden.copy_(saved.view(-1))
    assert torch.equal(x, saved) and x._version == 0
    assert _given(watch) == [True, False]       # 10%: missed by 256 places with probability 0.9 ** 256 < 1e-11


def test_a_copy_written_after_its_call_is_refused():
    x = torch.randn(64, 32)
    watch = _watch_given(x)
    y = x.clone()
    watch.stand_in(y)
    y.add_(1.0)
    assert _given(watch) == [False]


def test_without_the_routine_s_arguments_nothing_is_said_of_the_values():
    watch = Stopwatch(double)
    watch.stand_in(torch.ones(3))
    assert _given(watch) == [None]


# ---- a call that raised did no work (adv2 raising), and every call runs under the same grad mode

def test_a_call_that_raised_is_recorded_and_refuses_the_report():
    def fails(x):
        raise RuntimeError("no")

    watch = Stopwatch(fails)
    with pytest.raises(RuntimeError):
        watch.stand_in(torch.ones(2))
    [call] = watch.timeline()["calls"]
    assert call["raised"] == "RuntimeError"
    problems = unmeasured({}, watch.timeline(), figures=())
    assert any(p.startswith("a call raised: 1 call(s) of the function you were given raised (RuntimeError)")
               for p in problems), problems


def test_compiled_calls_that_raise_at_once_give_no_compiled_figure():
    # the adversarial hand-in ex05-raising: a compiled call under no_grad fails its grad-mode guard, and under
    # fail_on_recompile raises at once instead of compiling: no work, a tiny time
    import time

    watch = Stopwatch(double)
    x = torch.ones(8)
    with watch.hooked():
        torch._dynamo.reset()
        compiled = torch.compile(watch.stand_in, backend="eager", fullgraph=True, dynamic=False)
        compiled(x)
        quick = []
        torch.compiler.set_stance("fail_on_recompile")
        try:
            for _ in range(6):
                start = time.perf_counter()
                try:
                    with torch.no_grad():
                        compiled(x)
                except RuntimeError:
                    pass
                quick.append(time.perf_counter() - start)
        finally:
            torch.compiler.set_stance("default")
    calls = watch.timeline()["calls"]
    assert [c["raised"] for c in calls] == [None] + ["RuntimeError"] * 6
    problems = unmeasured({"compiled_fastest_s": min(quick)}, watch.timeline(), figures=("compiled_fastest_s",))
    assert any(p.startswith("a call raised") for p in problems), problems


def test_calls_under_different_grad_modes_are_no_comparison():
    watch = Stopwatch(double)
    watch.stand_in(torch.ones(2))
    with torch.no_grad():
        watch.stand_in(torch.ones(2))
    assert [c["grad"] for c in watch.timeline()["calls"]] == [True, False]
    problems = _eager_problems({}, watch.timeline())
    assert any("different grad modes" in p for p in problems), problems
    same = Stopwatch(double)
    with torch.no_grad():
        same.stand_in(torch.ones(2))
        same.stand_in(torch.ones(2))
    assert not _eager_problems({}, same.timeline())
