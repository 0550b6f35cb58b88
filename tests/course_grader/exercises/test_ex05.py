"""ex05 graded from its notebook's test cells: the student's reports against the calls the grader saw.

The student's ``time_and_record`` runs three times in one child (inductor, inductor again, eager),
given a ``stopwatch`` stand-in for ``fused`` that times every call made of it, eager or compiled, and
records what ``torch.compile`` was given. Every figure must lie between the time of the call it names
and the gap around that call (the first compiled call must be the one that compiled), the boundary
must state what torch.compile was given; the second inductor report is warm by arrangement; eager
reports no speedup and no cache. Nothing here compares with a timing taken at another moment, so
load on the machine changes no verdict.
"""

from __future__ import annotations

import pytest

TESTS = ("ex05-test-timing", "ex05-test-cache-speedup", "ex05-test-boundary")
STEADY = "    compiled_fastest = min(timed(compiled) for _ in range(STEADY_CALLS))\n"
SPEEDUP = "    speedup = eager_fastest / compiled_fastest if backend in CODEGEN_BACKENDS else None\n"


@pytest.fixture(autouse=True)
def one_thread():
    """Here the children run in this process: one torch thread, as in the sandbox (and the notebook), so
    a busy machine slows calls a little instead of stalling them on a descheduled thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def model(model_cells):
    return model_cells("ex05")["ex05-answer"]


def edited(source: str, old: str, new: str) -> dict[str, str]:
    assert old in source
    return {"ex05-answer": source.replace(old, new)}


def failing(verdicts) -> set[str]:
    return {k for k, v in verdicts.items() if not v.passed}


def test_model_answer_passes_every_test(grade_with, model_cells):
    verdicts = grade_with("ex05", model_cells("ex05"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


def test_a_flattered_compiled_time_is_an_invented_speedup(grade_with, model):
    # measured honestly, then the compiled figure divided by 10: v2 gave it 3/5 (the speedup matched the figures)
    verdicts = grade_with("ex05", edited(model, STEADY, STEADY + "    compiled_fastest = compiled_fastest / 10\n"))
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}
    assert "report['compiled_fastest_s']" in verdicts["ex05-test-timing"].message
    assert "not measured in those calls" in verdicts["ex05-test-timing"].message
    assert "figures were not measured" in verdicts["ex05-test-cache-speedup"].message


def test_widened_gaps_around_eager_calls_fail_the_timing_and_the_speedup(grade_with, model):
    # the v2 finding: a sleep inside each timed eager call (25.8x and 367.8x claimed) got 5/5
    padded = ("    def padded(f):\n        start = time.perf_counter()\n        time.sleep(0.02)\n        f(x)\n"
              "        return time.perf_counter() - start\n\n"
              "    eager_fastest = min(padded(fn) for _ in range(10))\n")
    verdicts = grade_with("ex05", edited(model, STEADY, STEADY + padded))
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}
    assert "report['eager_fastest_s']" in verdicts["ex05-test-timing"].message
    assert "speedup" in verdicts["ex05-test-cache-speedup"].message


def test_a_cache_reported_cold_whatever_happened_fails(grade_with, model):
    always_cold = SPEEDUP + "    cache = 'cold' if backend == 'inductor' else None\n"
    verdicts = grade_with("ex05", edited(model, SPEEDUP, always_cold))
    assert failing(verdicts) == {"ex05-test-cache-speedup"}, {k: v.message for k, v in verdicts.items()}
    assert "say 'warm', you reported 'cold'" in verdicts["ex05-test-cache-speedup"].message


def test_a_speedup_for_the_eager_backend_fails(grade_with, model):
    verdicts = grade_with("ex05", edited(model, SPEEDUP, "    speedup = eager_fastest / compiled_fastest\n"))
    assert failing(verdicts) == {"ex05-test-cache-speedup"}, {k: v.message for k, v in verdicts.items()}
    assert "must be None" in verdicts["ex05-test-cache-speedup"].message


def test_invented_constant_figures_fail_every_test(grade_with):
    invented = ("def time_and_record(fn, x, backend):\n"
                "    return {'backend': backend, 'eager_first_s': 0.01, 'eager_fastest_s': 0.004,\n"
                "            'compiled_first_s': 2.0, 'compiled_fastest_s': 0.001, 'cache': 'cold',\n"
                "            'speedup': 4.0 if backend == 'inductor' else None,\n"
                "            'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,\n"
                "                         'inputs': 'x: float32[256, 1024]', 'diagnostics': ['made up']}}\n")
    verdicts = grade_with("ex05", {"ex05-answer": invented})
    assert failing(verdicts) == set(TESTS)
    assert "no compiled call" in verdicts["ex05-test-boundary"].message


@pytest.mark.parametrize("cell, phrase", [
    # the released stub: the def stays, its body raises
    ('CODEGEN_BACKENDS = ("inductor",)\nSTEADY_CALLS = 20\n\n\ndef time_and_record(fn, x, backend):\n'
     '    raise NotImplementedError("ex05-answer: replace this line with your answer")\n',
     "raised NotImplementedError: ex05-answer: replace this line"),
    ('raise NotImplementedError("ex05-answer: replace")', "def time_and_record"),   # no def at all
])
def test_unanswered_fails_every_test_with_a_message(grade_with, cell, phrase):
    verdicts = grade_with("ex05", {"ex05-answer": cell})
    assert failing(verdicts) == set(TESTS)
    assert all(phrase in v.message for v in verdicts.values())


def test_figures_that_were_not_measured_in_the_call_fail_even_when_plausible(grade_with):
    # a student's reply from the released copy alone: constants near this machine's figures, the cache always
    # "warm" (the grader's cache is warm), nothing compiled; v3 before the call's own record gave it 5/5
    plausible = ("def time_and_record(fn, x, backend):\n"
                 "    import time\n"
                 "    jitter = (time.perf_counter() % 1) * 1e-6   # never the same figures twice\n"
                 "    return {'backend': backend, 'eager_first_s': 0.004 + jitter, 'eager_fastest_s': 0.0013,\n"
                 "            'compiled_first_s': 0.9, 'compiled_fastest_s': 0.0004,\n"
                 "            'cache': 'warm' if backend == 'inductor' else None,\n"
                 "            'speedup': 3.25 if backend == 'inductor' else None,\n"
                 "            'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,\n"
                 "                         'inputs': 'x: float32 [256, 1024]', 'diagnostics': ['counters']}}\n")
    verdicts = grade_with("ex05", {"ex05-answer": plausible})
    assert not verdicts["ex05-test-timing"].passed
    assert "not measured" in verdicts["ex05-test-timing"].message
    assert not verdicts["ex05-test-cache-speedup"].passed


FIRST = "    compiled_first = timed(compiled)\n"


def test_constants_with_a_sleep_and_one_untimed_compile_get_the_boundary_only(grade_with):
    # issue #26: constants near this machine's figures with jitter, one untimed compile, the cache state read
    # honestly and a 1.2 s sleep got 5/5 from v3; fair is the boundary's point
    cheat = ("def time_and_record(fn, x, backend):\n"
             "    import time\n"
             "    torch._dynamo.reset()\n"
             "    compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)\n"
             "    before = dict(torch._dynamo.utils.counters['inductor'])\n"
             "    compiled(x)\n"
             "    after = dict(torch._dynamo.utils.counters['inductor'])\n"
             "    cache = None\n"
             "    if after.get('fxgraph_cache_miss', 0) > before.get('fxgraph_cache_miss', 0):\n"
             "        cache = 'cold'\n"
             "    elif after.get('fxgraph_cache_hit', 0) > before.get('fxgraph_cache_hit', 0):\n"
             "        cache = 'warm'\n"
             "    time.sleep(1.2)\n"
             "    jitter = (time.perf_counter() % 1) * 1e-5\n"
             "    e, c = 0.0013 + jitter, 0.0004 + jitter\n"
             "    return {'backend': backend, 'eager_first_s': 0.004 + jitter, 'eager_fastest_s': e,\n"
             "            'compiled_first_s': 0.9 + jitter, 'compiled_fastest_s': c, 'cache': cache,\n"
             "            'speedup': e / c if backend == 'inductor' else None,\n"
             "            'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,\n"
             "                         'inputs': 'x: float32[256, 1024]', 'diagnostics': ['perf_counter']}}\n")
    verdicts = grade_with("ex05", {"ex05-answer": cheat})
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}, \
        {k: v.message for k, v in verdicts.items()}
    assert "not measured" in verdicts["ex05-test-timing"].message


def test_an_invented_first_call_fails_the_timing_only(grade_with, model):
    # measured steady figures, but a first-call figure made up (the compile's duration is a guess)
    verdicts = grade_with("ex05", edited(model, FIRST, FIRST + "    compiled_first = 1.5 + compiled_first / 100\n"))
    assert failing(verdicts) == {"ex05-test-timing"}, {k: v.message for k, v in verdicts.items()}
    assert "report['compiled_first_s']" in verdicts["ex05-test-timing"].message


def test_a_first_call_timed_after_an_untimed_compile_fails_the_timing(grade_with, model):
    verdicts = grade_with("ex05", edited(model, FIRST, "    compiled(x)\n" + FIRST))
    assert "ex05-test-timing" in failing(verdicts), {k: v.message for k, v in verdicts.items()}
    assert "report['compiled_first_s']" in verdicts["ex05-test-timing"].message


def test_a_boundary_that_says_fullgraph_false_while_the_code_said_true_fails_the_boundary(grade_with, model):
    old = '"fullgraph": True, "dynamic": False,\n'
    verdicts = grade_with("ex05", edited(model, old, old.replace("True", "False")))
    assert failing(verdicts) == {"ex05-test-boundary"}, {k: v.message for k, v in verdicts.items()}
    assert "fullgraph=False" in verdicts["ex05-test-boundary"].message


def test_no_message_shows_the_grader_s_figures(grade_with, model):
    verdicts = grade_with("ex05", edited(model, STEADY, STEADY + "    compiled_fastest = compiled_fastest / 10\n"))
    for verdict in verdicts.values():
        assert "grader" not in verdict.message and " took " not in verdict.message, verdict.message


def test_eager_timed_on_fewer_threads_than_compiled_gets_the_boundary_only(grade_with, model):
    # the hostile corpus's adv-starved-eager: every figure measured around its call, but eager on one thread
    # and compiled on two, a speedup the compiler did not earn; v3 had no thread count to compare
    eager = "    eager_first = timed(fn)\n"
    starved = edited(model, eager, "    torch.set_num_threads(1)\n" + eager)["ex05-answer"]
    starved = starved.replace("    torch._dynamo.reset()", "    torch.set_num_threads(2)\n    torch._dynamo.reset()", 1)
    verdicts = grade_with("ex05", {"ex05-answer": starved})
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}, \
        {k: v.message for k, v in verdicts.items()}
    assert "different torch thread counts (1 and 2" in verdicts["ex05-test-timing"].message
    assert "thread counts" in verdicts["ex05-test-cache-speedup"].message


def test_inductor_s_counters_rewritten_by_subscript_refuse_the_answer(grade_with, model):
    # the adversarial student's mal06: after a compile that missed the cache, the answer wrote the counters
    # back by subscript (`c["fxgraph_cache_miss"] = ...`) so that the grader's own reading said 'warm' (5/5)
    after = "    after = dict(torch._dynamo.utils.counters[\"inductor\"])\n"
    forged = after + ("    c = torch._dynamo.utils.counters[\"inductor\"]\n"
                      "    c[\"fxgraph_cache_miss\"] = before.get(\"fxgraph_cache_miss\", 0)\n")
    verdicts = grade_with("ex05", edited(model, after, forged))
    assert failing(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}
    assert "writing into `c[...]` is not allowed" in verdicts["ex05-test-cache-speedup"].message


EAGER_STEADY = "    eager_fastest = min(timed(fn) for _ in range(STEADY_CALLS))\n"
COMPILED_STEADY = "    compiled_fastest = min(timed(compiled) for _ in range(STEADY_CALLS))\n"


def test_a_sleep_inside_every_steady_eager_timer_gets_the_boundary_only(grade_with, model):
    # the adversarial hand-in ex05-sleepgap (5/5 before): each steady eager call timed with a 20 ms sleep inside its
    # timer, so every call's gap held the figure and none was "surely faster"; the figure is far above any call's
    # own span and what a timer adds to it
    padded = ("    def padded(f):\n        start = time.perf_counter()\n        time.sleep(0.02)\n        f(x)\n"
              "        return time.perf_counter() - start\n\n"
              "    eager_fastest = min(padded(fn) for _ in range(STEADY_CALLS))\n")
    verdicts = grade_with("ex05", edited(model, EAGER_STEADY, padded))
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}, \
        {k: v.message for k, v in verdicts.items()}
    assert "report['eager_fastest_s']" in verdicts["ex05-test-timing"].message
    assert "your timer held other work besides the call" in verdicts["ex05-test-timing"].message


def test_steady_eager_calls_on_other_values_of_x_s_form_get_the_boundary_only(grade_with, model):
    # the adversarial hand-in ex05-values (5/5 before): x * inf has x's dtype, shape and contiguity, and sends sin and
    # cos down a slow path (about 16x); describe_arg cannot tell it from x
    slow = "    slow = x * float('inf')\n    eager_fastest = min(timed(fn, slow) for _ in range(STEADY_CALLS))\n"
    source = edited(model, EAGER_STEADY, slow)["ex05-answer"]
    source = source.replace("    def timed(f):\n        start = time.perf_counter()\n        f(x)\n",
                            "    def timed(f, on=x):\n        start = time.perf_counter()\n        f(on)\n")
    verdicts = grade_with("ex05", {"ex05-answer": source})
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}, \
        {k: v.message for k, v in verdicts.items()}
    assert "called on other values than x's" in verdicts["ex05-test-timing"].message


def test_x_changed_behind_its_version_counter_is_refused_by_the_allow_list(grade_with, model):
    # the same slow values made in x's own memory and put back: x's version would not count it; .data is refused
    hidden = ("    saved = x.clone()\n    x.data.mul_(float('inf'))\n" + EAGER_STEADY + "    x.data.copy_(saved)\n")
    verdicts = grade_with("ex05", edited(model, EAGER_STEADY, hidden))
    assert failing(verdicts) == set(TESTS)
    assert "`.data` is not allowed" in verdicts["ex05-test-timing"].message


def test_steady_compiled_calls_that_raise_at_once_get_the_boundary_only(grade_with, model):
    # the adversarial hand-in ex05-raising (5/5 before): under fail_on_recompile a compiled call under no_grad fails
    # its grad-mode guard and raises at once (caught): its tiny time was taken as the compiled fastest
    quick = ("    def quick(f):\n        start = time.perf_counter()\n        try:\n"
             "            with torch.no_grad():\n                f(x)\n        except RuntimeError:\n            pass\n"
             "        return time.perf_counter() - start\n\n"
             "    torch.compiler.set_stance('fail_on_recompile')\n"
             "    try:\n        compiled_fastest = min(quick(compiled) for _ in range(STEADY_CALLS))\n"
             "    finally:\n        torch.compiler.set_stance('default')\n")
    verdicts = grade_with("ex05", edited(model, COMPILED_STEADY, quick))
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}, \
        {k: v.message for k, v in verdicts.items()}
    assert "a call raised" in verdicts["ex05-test-timing"].message
    assert "(RuntimeError)" in verdicts["ex05-test-timing"].message


def test_timing_on_an_unchanged_copy_of_x_passes(grade_with, model):
    # honest: the routine times fn on x.clone() (equal values, never written): the same work
    source = model.replace("    eager_first = timed(fn)\n", "    x = x.clone()\n    eager_first = timed(fn)\n", 1)
    assert source != model
    verdicts = grade_with("ex05", {"ex05-answer": source})
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


@pytest.fixture
def grad_mode():
    """Leaves torch's grad mode as it found it (here the children run in this process)."""
    import torch

    before = torch.is_grad_enabled()
    yield
    torch.set_grad_enabled(before)


def test_every_call_under_no_grad_passes_and_mixed_grad_modes_do_not(grade_with, model, grad_mode):
    body = model.split("    eager_first = timed(fn)\n", 1)
    assert len(body) == 2
    everything = body[0] + "    torch.set_grad_enabled(False)\n    eager_first = timed(fn)\n" + body[1]
    verdicts = grade_with("ex05", {"ex05-answer": everything})
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}
    mixed = edited(model, "    torch._dynamo.reset()", "    torch.set_grad_enabled(False)\n    torch._dynamo.reset()")
    verdicts = grade_with("ex05", mixed)
    assert failing(verdicts) == {"ex05-test-timing", "ex05-test-cache-speedup"}, \
        {k: v.message for k, v in verdicts.items()}
    assert "different grad modes" in verdicts["ex05-test-timing"].message
