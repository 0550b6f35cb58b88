"""ex05 verdicts: timing claims checked against the grader's own records of the same calls.

The harness runs the student's ``time_and_record`` under three conditions it arranges
(inductor with an empty FX graph cache, inductor again with it warm, backend
``eager``) and timestamps every call the student makes. Here:

* a reported first call must fit the grader's record of that call: at least as long
  as the call itself, at most the gap between the calls around it;
* a reported fastest steady call can be no faster than the fastest steady call the
  grader saw, and no slower than the narrowest gap around any steady call (each steady
  call i was timed as s_i with d_i <= s_i <= U_i, so min s_i lies in [min d_i, min U_i]);
* the cache claim must be what the grader saw during the first compiled call (and
  what it arranged: cold, then warm; none for a backend that generates no code);
* the speedup is eager's fastest steady call over the compiled one's, from the
  student's own figures, and None for a backend that generates no code;
* the boundary names the settings torch.compile actually received.

None of these depends on how busy the machine is: a slow call widens the gaps an
honest figure must fit in, it never moves one out.
"""

from __future__ import annotations

from ..context import AnswerError, GradeContext, TestVerdict, excerpt, shown
from ..harness.ex05 import ALLOWED, FUNCTION, REPORT_KEYS, SHAPE

HARNESS = "ex05"
ANSWER_CELL = "ex05-answer"
CODEGEN_BACKENDS = ("inductor",)
EXPECTED_CACHE = {"cold": "cold", "warm": "warm", "eager": None}
MIN_STEADY_CALLS = 5
EPS_S = 5e-5          # clock rounding between time.perf_counter and other monotonic clocks
RATIO_RTOL = 1e-6
WORDS = ("cold", "warm", "inductor", "eager", "aot_eager")  # reported values feedback may repeat
TESTS = ("ex05-test-timing", "ex05-test-cache-speedup", "ex05-test-boundary")


def _positive(value) -> bool:
    return type(value) in (int, float) and not isinstance(value, bool) and 0 < value < 1e6


def _windows(run: dict, kind: str) -> list[tuple[float, float, dict]]:
    """``(duration, widest honest figure, event)`` for each counted call of ``kind``, in order.

    Only calls of the workload (``fn`` or ``torch.compile(fn)`` on the grader's ``x``) count;
    every recorded call bounds the gaps around them."""
    events = sorted(run["events"], key=lambda e: e["t0"])
    out = []
    for i, e in enumerate(events):
        if e["kind"] != kind or e.get("counts") is not True:
            continue
        before = events[i - 1]["t1"] if i > 0 else run["start"]
        after = events[i + 1]["t0"] if i + 1 < len(events) else run["end"]
        out.append((e["t1"] - e["t0"], after - before, e))
    return out


def _timing_problems(name: str, run: dict) -> list[str]:
    report, problems = run["report"], []
    for kind in ("eager", "compiled"):
        calls = _windows(run, kind)
        first_key, fastest_key = f"{kind}_first_s", f"{kind}_fastest_s"
        first, fastest = report.get(first_key), report.get(fastest_key)
        if len(calls) < 1 + MIN_STEADY_CALLS:
            problems.append(f"{name}: the grader saw {len(calls)} call(s) of the {kind} function on x; time the "
                            f"first call and then at least {MIN_STEADY_CALLS} steady calls, each on x")
            continue
        duration, widest, event = calls[0]
        if not _positive(first) or not duration - EPS_S <= first <= widest + EPS_S:
            problems.append(f"{name}: {first_key} = {shown(first)} does not fit the grader's record of that first call "
                            f"(it took {duration:.4f} s; nothing around it leaves room for more than {widest:.4f} s)")
        if kind == "compiled" and event.get("frames", 0) < 1:
            problems.append(f"{name}: the first compiled call compiled nothing: reset Dynamo before compiling, "
                            "so the first call is really the first")
        steady = calls[1:]
        # Every steady call i was timed as some s_i with d_i <= s_i <= U_i, so the fastest of them,
        # min s_i, lies in [min d_i, min U_i]; load widens both ends together, never moves them apart.
        floor, ceiling = min(d for d, _, _ in steady), min(w for _, w, _ in steady)
        if not _positive(fastest) or not floor - EPS_S <= fastest <= ceiling + EPS_S:
            problems.append(f"{name}: {fastest_key} = {shown(fastest)} does not fit the grader's records of the steady "
                            f"calls (the fastest took {floor:.6f} s, and some steady call had no more than "
                            f"{ceiling:.6f} s around it)")
    return problems


def _first_compiled(run: dict) -> dict | None:
    calls = _windows(run, "compiled")
    return calls[0][2] if calls else None


def _cache_speedup_problems(name: str, run: dict) -> list[str]:
    report, problems = run["report"], []
    first = _first_compiled(run)
    seen = None if first is None else ("cold" if first["misses"] else "warm" if first["hits"] else None)
    arranged = EXPECTED_CACHE[name]
    if seen != arranged:
        problems.append(f"{name}: the grader arranged a {arranged or 'no-codegen'} condition but saw "
                        f"{seen or 'no FX graph cache use'} during your first compiled call")
    elif report.get("cache") != arranged:
        happened = "missed (cold)" if arranged == "cold" else "hit (warm)" if arranged else "was not used (None)"
        problems.append(f"{name}: you reported cache {shown(report.get('cache'), WORDS)}; during the first "
                        f"compiled call the FX graph cache {happened}")
    speedup = report.get("speedup")
    if run["backend"] in CODEGEN_BACKENDS:
        e, c = report.get("eager_fastest_s"), report.get("compiled_fastest_s")
        if not (_positive(e) and _positive(c) and _positive(speedup)) or abs(speedup - e / c) > RATIO_RTOL * (e / c):
            problems.append(f"{name}: speedup {shown(speedup)} should be eager_fastest_s / compiled_fastest_s "
                            "(fastest steady calls; first calls excluded)")
    elif speedup is not None:
        problems.append(f"{name}: backend {run['backend']!r} generates no code, "
                        f"so speedup must be None, not {shown(speedup)}")
    return problems


def _boundary_problems(name: str, run: dict) -> list[str]:
    b, problems = run["report"].get("boundary"), []
    if not isinstance(b, dict):
        return [f"{name}: report['boundary'] should be a dict of backend, fullgraph, dynamic, inputs, diagnostics"]
    if not run.get("compile_calls"):
        return [f"{name}: your function never called torch.compile, so the boundary describes no compile"]
    used = run["compile_calls"][-1]
    for key, default in (("backend", "inductor"), ("fullgraph", False), ("dynamic", None)):
        actual = used.get(key, default)
        if b.get(key) != actual:
            problems.append(f"{name}: boundary[{key!r}] is {shown(b.get(key), WORDS)}, "
                            f"but torch.compile received {shown(actual, WORDS)}")
    if type(b.get("fullgraph")) is not bool or type(b.get("dynamic")) is not bool:
        problems.append(f"{name}: state fullgraph and dynamic explicitly (True or False) in the boundary")
    inputs = b.get("inputs")
    if not isinstance(inputs, str) or not all(s in inputs for s in ("float32", *map(str, SHAPE))):
        problems.append(f"{name}: boundary['inputs'] ({shown(inputs)}) should name x's dtype and shape")
    diagnostics = b.get("diagnostics")
    if not isinstance(diagnostics, list) or not diagnostics or not all(isinstance(d, str) and d for d in diagnostics):
        problems.append(f"{name}: boundary['diagnostics'] should list the tools your numbers come from")
    return problems


def _verdict(test_id: str, problems: list[str], ok: str) -> TestVerdict:
    return TestVerdict(test_id, not problems, ok if not problems else "\n".join(problems[:8]))


def grade(ctx: GradeContext) -> list[TestVerdict]:
    try:
        source = ctx.function_source(ANSWER_CELL, FUNCTION, ALLOWED)
    except AnswerError as exc:
        return [TestVerdict(t, False, str(exc)) for t in TESTS]
    reply = ctx.measure("run", {"source": source})
    if reply.get("load_error"):
        why = excerpt(reply["load_error"])
        return [TestVerdict(t, False, f"your function could not be loaded: {why}") for t in TESTS]
    broken = []
    for name, run in reply["runs"].items():
        report = run.get("report")
        if run.get("error"):
            broken.append(f"{name} ({run['backend']}): time_and_record raised {excerpt(run['error'])}")
        elif not isinstance(report, dict) or not REPORT_KEYS <= set(report):
            got = (f"it lacks {sorted(REPORT_KEYS - set(report))}" if isinstance(report, dict)
                   else f"got {shown(report)}")
            broken.append(f"{name} ({run['backend']}): the report should be a dict with {sorted(REPORT_KEYS)}; "
                          f"{got}")
        elif report.get("backend") != run["backend"]:
            broken.append(f"{name}: report['backend'] is {shown(report.get('backend'), WORDS)}, "
                          f"but it was called with {run['backend']!r}")
    if broken:
        return [TestVerdict(t, False, "\n".join(broken)) for t in TESTS]
    runs = reply["runs"]
    return [
        _verdict("ex05-test-timing", [p for n, r in runs.items() for p in _timing_problems(n, r)],
                 "first calls and fastest steady calls agree with the grader's records (cold, warm, eager)"),
        _verdict("ex05-test-cache-speedup", [p for n, r in runs.items() for p in _cache_speedup_problems(n, r)],
                 "cache condition as arranged (cold, then warm); speedup from fastest steady calls, None for eager"),
        _verdict("ex05-test-boundary", [p for n, r in runs.items() for p in _boundary_problems(n, r)],
                 "the boundary names the settings torch.compile received and the input contract"),
    ]
