"""compile_course.measurement.run against real torch: one call, a compiled sequence, a timing."""

import torch

from compile_course.measurement.run import (
    call_one,
    compile_run,
    compile_stats,
    restore_global_state,
    time_calls,
    upstream_gradient,
)


def square_sum(x, w):
    return (x * w).sin().sum(dim=0)


def test_call_one_returns_the_value_and_the_gradients_autograd_gives():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64)
    result = call_one(square_sum, (x, w), grad=True)
    out = square_sum(x, w)
    want, = torch.autograd.grad(out, [x], upstream_gradient(out.detach()))
    assert result.ok and torch.equal(result.value, out.detach())
    assert len(result.grads) == 1 and torch.equal(result.grads[0], want)
    assert result.wall_s >= 0 and result.compiled == {"graphs": 0, "fxgraph_hit": 0, "fxgraph_miss": 0}


def test_the_upstream_gradient_is_not_uniform():
    g = upstream_gradient(torch.zeros(2, 3))
    assert g.shape == (2, 3) and g[0, 0] == 1.0 and g[-1, -1] == 2.0 and len(set(g.flatten().tolist())) == 6


def test_an_error_is_part_of_the_answer():
    result = call_one(lambda x: x.no_such_method(), (torch.ones(1),))
    assert not result.ok and result.error.startswith("AttributeError: ")
    no_grad = call_one(lambda x: x * 2, (torch.ones(1),), grad=True)
    assert no_grad.error == "the output does not require grad: no gradient flows back"
    not_tensor = call_one(lambda x: 3, (torch.ones(1, requires_grad=True),), grad=True)
    assert not_tensor.error == "returned int, not a tensor"


def with_a_break(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * 2


def test_compile_run_records_graphs_breaks_and_recompiles_as_torch_reports_them():
    run, = compile_run(with_a_break, [(torch.ones(3),), (torch.ones(3),), (torch.ones(3, dtype=torch.float64),)])
    assert [torch.equal(c.value, torch.full((3,), 4.0, dtype=c.value.dtype)) for c in run.calls] == [True] * 3
    assert run.frames == len(run.graphs) == sum(run.graphs_per_call) and run.graphs_per_call[1] == 0
    assert run.graphs_per_call[0] == 2 and run.graphs_per_call[2] >= 1          # a dtype change recompiles
    assert run.breaks and run.breaks[0].gb_id and run.breaks[0].gb_id.startswith("GB")
    assert any("dtype" in line or "float64" in line for line in run.guard_failures), run.guard_failures
    assert {n["op"] for n in run.graphs[0]["nodes"]} >= {"placeholder", "call_function", "output"}


def test_compile_run_fresh_compiles_anew_for_every_call():
    runs = compile_run(lambda x: x * 2, [(torch.ones(2),), (torch.ones(2),)], fresh=True)
    assert [r.frames for r in runs] == [1, 1]
    shared, = compile_run(lambda x: x * 2, [(torch.ones(2),), (torch.ones(2),)])
    assert shared.graphs_per_call == [1, 0]


def test_compile_stats_count_the_graphs_a_call_compiled():
    before = compile_stats()
    result = call_one(torch.compile(lambda x: x.cos(), backend="eager"), (torch.ones(2),))
    assert result.compiled["graphs"] == 1 and compile_stats()["graphs"] == before["graphs"] + 1


def test_time_calls_times_the_first_call_apart_from_the_fastest():
    timing = time_calls(lambda x: x * 2, (torch.ones(8),), calls=3)
    assert timing.calls == 4 and timing.cache is None
    assert 0 <= timing.fastest_s and timing.first_s + timing.fastest_s <= timing.wall_s


def test_restore_global_state_undoes_what_a_call_switched():
    torch.compiler.set_stance("force_eager")
    torch.set_grad_enabled(False)
    torch.set_default_dtype(torch.float64)
    restore_global_state()
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32
    assert call_one(torch.compile(lambda x: x + 1, backend="eager"), (torch.ones(1),)).compiled["graphs"] == 1


def test_nothing_a_call_leaves_in_torch_s_counters_reaches_the_next_call():
    # mal06: a timing answer kept its own count in torch._dynamo.utils.counters["adv_state"] from one graded
    # call to the next, and the counters are what a call's `compiled` figures come from
    counters = torch._dynamo.utils.counters
    counters["adv_state"]["runs"] += 1
    counters["inductor"]["fxgraph_cache_hit"] += 7
    restore_global_state()
    assert "adv_state" not in counters and counters["inductor"]["fxgraph_cache_hit"] == 0
    result = call_one(torch.compile(lambda x: x * 2, backend="eager"), (torch.ones(1),))
    assert result.compiled == {"graphs": 1, "fxgraph_hit": 0, "fxgraph_miss": 0}
