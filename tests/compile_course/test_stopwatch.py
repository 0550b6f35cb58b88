"""The stopwatch records the torch thread count of every timed call, and refuses figures taken under different ones."""

from __future__ import annotations

import pytest
import torch

from compile_course.stopwatch import CHANGED_DURING_CALL, Stopwatch, unequal_threads, unmeasured


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
