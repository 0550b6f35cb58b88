"""Measuring a function: one call (call_one), a compiled sequence of calls (compile_run), and a timing (time_calls).

Each returns a record of ``records`` (:class:`CallResult`, :class:`Run`, :class:`Timing`), made in
whatever process runs the function: the student's kernel (``compile_course.testing``), the grader's
sandboxed measuring child (``course_grader.harness.child``), or instructor code measuring its own
functions (``reference``). Not here: deciding whether an answer is right (the test cells do).
"""

from __future__ import annotations

import time

import torch

from ..diagnostics import collected_logs, guard_failures
from .codec import MAX_TEXT, error_text, to_data_safe
from .graphs import graph_data
from .records import COMPILE_STATS, CallResult, Run, Timing, parse_break


def upstream_gradient(out: torch.Tensor) -> torch.Tensor:
    """A fixed, non-uniform upstream gradient (1..2), so a permuted or sign-flipped gradient shows."""
    if not out.numel():
        return torch.ones_like(out)
    return torch.linspace(1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)


def restore_global_state() -> None:
    """Undo what a call may have switched globally (stance, grad mode, default dtype, seed), and empty
    torch's counters: a call's :attr:`CallResult.compiled` is the difference over that call alone, and
    nothing a call left in them (a count, a group of its own) reaches the next one."""
    torch.compiler.set_stance("default")
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    torch._dynamo.utils.counters.clear()


def compile_stats() -> dict:
    """torch's counters that :data:`~compile_course.measurement.records.COMPILE_STATS` names, now."""
    counters = torch._dynamo.utils.counters
    return {key: int(counters[group].get(name, 0)) for key, (group, name) in COMPILE_STATS.items()}


def _grad_inputs(args: tuple) -> list[torch.Tensor]:
    return [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]


def call_one(fn, args: tuple, kwargs: dict | None = None, *, grad: bool = False) -> CallResult:
    """``fn(*args, **kwargs)``; with ``grad``, also the gradients of the tensor arguments that
    require grad, for the upstream gradient :func:`upstream_gradient` of the (tensor) output."""
    kwargs = kwargs or {}
    before = compile_stats()
    start = time.perf_counter()

    def seen(result: CallResult) -> CallResult:
        after = compile_stats()
        result.wall_s = time.perf_counter() - start
        result.compiled = {k: max(0, after[k] - before[k]) for k in after}
        return result

    try:
        out = fn(*args, **kwargs)
        grads = None
        if grad:
            inputs = _grad_inputs(args)
            if not isinstance(out, torch.Tensor):
                return seen(CallResult(to_data_safe(out), None, f"returned {type(out).__name__}, not a tensor"))
            if not out.requires_grad:
                return seen(CallResult(out.detach(), None,
                                       "the output does not require grad: no gradient flows back"))
            found = torch.autograd.grad(out, inputs, upstream_gradient(out.detach()), allow_unused=True)
            grads = [g.detach() if g is not None else None for g in found]
        return seen(CallResult(out.detach() if isinstance(out, torch.Tensor) else out, grads, None))
    except Exception as exc:  # noqa: BLE001 - an error is part of the answer
        return seen(CallResult(None, None, error_text(exc)))


def compile_run(fn, calls: list[tuple], *, backend: str = "eager", fullgraph: bool = False,
                dynamic: bool | None = None, stance: str | None = None, grad: bool = False,
                fresh: bool = False, binding_of=None) -> list[Run]:
    """``torch.compile(fn, backend=..., fullgraph=..., dynamic=...)`` called on each of ``calls`` (argument tuples).

    Without ``fresh``: one compiled function for the whole sequence, one :class:`Run`. With
    ``fresh``: Dynamo's caches are emptied and ``fn`` compiled anew before every call, one
    :class:`Run` a call (so no call's compile depends on an earlier one). ``binding_of``: passed to
    :func:`~.graphs.graph_data` for every graph (the grader's child names a ``nonstrict_trace``
    function's binding with it).
    """
    inner = torch._dynamo.lookup_backend(backend)
    runs: list[Run] = []
    graphs: list[dict] = []

    def recording(gm, example_inputs):
        try:
            graphs.append(graph_data(gm, binding_of))
        except Exception:  # noqa: BLE001 - a graph that cannot be described is still compiled
            graphs.append({"nodes": [], "unreadable": True})
        return inner(gm, example_inputs)

    def start() -> tuple:
        torch._dynamo.reset()
        restore_global_state()
        if stance:
            torch.compiler.set_stance(stance)
        return torch.compile(fn, backend=recording, fullgraph=fullgraph, dynamic=dynamic), Run([])

    compiled, run = start()
    for i, args in enumerate(calls):
        if fresh and i:
            runs.append(run)
            compiled, run = start()
        before = len(graphs)
        with collected_logs("graph_breaks", "recompiles") as logs:
            result = call_one(compiled, tuple(args), grad=grad)
        run.calls.append(result)
        run.graphs_per_call.append(len(graphs) - before)
        run.graphs += graphs[before:]
        run.frames += len(graphs) - before
        run.breaks += [parse_break(m) for m in logs["graph_breaks"]]
        run.recompiles += [m[:MAX_TEXT] for m in logs["recompiles"]]
        run.guard_failures += guard_failures(logs["recompiles"])
    runs.append(run)
    torch.compiler.set_stance("default")
    return runs


def time_calls(fn, args: tuple, *, backend: str | None = None, calls: int = 20) -> Timing:
    """Times ``fn(*args)`` (or ``torch.compile(fn, backend=backend)``) with ``time.perf_counter``:
    the first call apart, then the fastest of ``calls`` steady calls. Dynamo's caches are reset
    first, so a compiled first call compiles; ``cache`` says whether inductor's FX graph cache
    was missed or hit."""
    start_all = time.perf_counter()
    target = fn
    if backend is not None:
        torch._dynamo.reset()
        target = torch.compile(fn, backend=backend)
    counters = torch._dynamo.utils.counters
    before = dict(counters["inductor"])

    def timed() -> float:
        start = time.perf_counter()
        target(*args)
        return time.perf_counter() - start

    first = timed()
    after = dict(counters["inductor"])
    cache = None
    if after.get("fxgraph_cache_miss", 0) > before.get("fxgraph_cache_miss", 0):
        cache = "cold"
    elif after.get("fxgraph_cache_hit", 0) > before.get("fxgraph_cache_hit", 0):
        cache = "warm"
    fastest = min(timed() for _ in range(max(1, calls)))
    return Timing(first, fastest, calls + 1, cache, time.perf_counter() - start_all)
