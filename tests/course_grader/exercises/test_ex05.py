"""ex05: reported timings are checked against the grader's own records of the same calls."""

from __future__ import annotations

import copy

import pytest

from course_grader.exercises import ex05


def run(backend="inductor", cache="cold", **report_changes):
    """A recorded run: 1 eager first call + 5 steady, 1 compiled first call + 5 steady, small gaps."""
    events, t = [], 0.0
    for kind, first, steady in (("eager", 0.010, 0.004), ("compiled", 2.0, 0.001)):
        for i in range(6):
            d = first if i == 0 else steady + 0.0001 * i
            e = {"kind": kind, "t0": t + 0.0002, "t1": t + 0.0002 + d, "counts": True}
            if kind == "compiled":
                e |= {"frames": 1 if i == 0 else 0, "hits": int(i == 0 and cache == "warm"),
                      "misses": int(i == 0 and cache == "cold")}
            events.append(e)
            t = e["t1"]
    report = {"backend": backend, "eager_first_s": 0.0101, "eager_fastest_s": 0.0041, "compiled_first_s": 2.0001,
              "compiled_fastest_s": 0.00111, "cache": cache if backend == "inductor" else None,
              "speedup": 0.0041 / 0.00111 if backend == "inductor" else None,
              "boundary": {"backend": backend, "fullgraph": True, "dynamic": False,
                           "inputs": "x: float32[256, 1024]", "diagnostics": ["time.perf_counter"]}}
    report.update(report_changes)
    return {"backend": backend, "error": None, "report": report, "start": 0.0, "end": t + 0.0002, "events": events,
            "compile_calls": [{"backend": backend, "fullgraph": True, "dynamic": False}]}


def test_honest_figures_fit_the_records():
    r = run()
    assert ex05._timing_problems("cold", r) == []
    assert ex05._cache_speedup_problems("cold", r) == []
    assert ex05._boundary_problems("cold", r) == []
    e = run(backend="eager", cache=None)
    assert ex05._cache_speedup_problems("eager", e) == []


@pytest.mark.parametrize("change, phrase", [
    ({"compiled_first_s": 0.5}, "compiled_first_s"),        # shorter than the call took
    ({"compiled_first_s": 60.0}, "compiled_first_s"),       # longer than anything around it allows
    ({"compiled_fastest_s": 0.0001}, "compiled_fastest_s"),  # faster than any steady call the grader saw
    ({"eager_fastest_s": 30.0}, "eager_fastest_s"),
    ({"eager_first_s": "fast"}, "eager_first_s"),
])
def test_invented_figures_do_not_fit(change, phrase):
    problems = ex05._timing_problems("cold", run(**change))
    assert problems and phrase in problems[0]


def test_too_few_steady_calls_and_a_first_call_that_compiled_nothing():
    r = run()
    r["events"] = [e for e in r["events"] if not (e["kind"] == "eager" and e["t0"] > 0.02)]
    assert "at least 5 steady calls" in " ".join(ex05._timing_problems("cold", r))
    r = run()
    next(e for e in r["events"] if e["kind"] == "compiled")["frames"] = 0
    assert "compiled nothing" in " ".join(ex05._timing_problems("cold", r))


def test_calls_on_another_input_or_another_function_do_not_lower_the_floor():
    r = run(compiled_fastest_s=0.00001, speedup=0.0041 / 0.00001)
    last = r["events"][-1]
    r["events"].append({"kind": "compiled", "t0": last["t1"] + 0.001, "t1": last["t1"] + 0.00101, "counts": False,
                        "frames": 0, "hits": 0, "misses": 0})
    r["end"] = last["t1"] + 0.002
    assert "compiled_fastest_s" in " ".join(ex05._timing_problems("cold", r))


def test_cache_claims_are_what_the_grader_saw():
    lying = run(cache="warm")
    lying["report"]["cache"] = "cold"
    assert "you reported cache 'cold'" in " ".join(ex05._cache_speedup_problems("warm", lying))
    assert ex05._cache_speedup_problems("warm", run(cache="warm")) == []


def test_speedup_is_fastest_over_fastest_and_none_without_codegen():
    median_based = run(speedup=0.0045 / 0.0012)
    assert "speedup" in " ".join(ex05._cache_speedup_problems("cold", median_based))
    claims = run(backend="eager", cache=None, speedup=3.0)
    assert "must be None" in " ".join(ex05._cache_speedup_problems("eager", claims))


def test_boundary_must_name_what_torch_compile_received():
    r = run()
    r["compile_calls"] = [{"backend": "inductor", "fullgraph": False, "dynamic": False}]
    assert "fullgraph" in " ".join(ex05._boundary_problems("cold", r))
    r = run()
    r["report"]["boundary"] = copy.deepcopy(r["report"]["boundary"]) | {"inputs": "a tensor"}
    assert "inputs" in " ".join(ex05._boundary_problems("cold", r))
    r = run()
    r["compile_calls"] = []          # an invented report: nothing was compiled
    assert ex05._boundary_problems("cold", r) == [
        "cold: your function never called torch.compile, so the boundary describes no compile"]


def test_model_answer_passes_under_the_arranged_conditions(grade_with, model_cells):
    verdicts = grade_with("ex05", model_cells("ex05"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


# ------------------------------------------------ load-independent bounds on synthetic records

def _steady(r, kind):
    return [e for e in r["events"] if e["kind"] == kind][1:]


def test_inflated_fastest_fails_even_when_one_steady_call_had_a_wide_gap():
    r = run(eager_fastest_s=0.041, speedup=0.041 / 0.00111)  # x10 the fastest eager call
    # One steady call stalled (a loaded machine): the gap around it is wide enough for x10.
    stalled = _steady(r, "eager")[2]
    stalled["t1"] += 0.2
    for e in r["events"]:
        if e["t0"] > stalled["t0"]:
            e["t0"] += 0.2
            e["t1"] += 0.2
    r["end"] += 0.2
    assert any("eager_fastest_s" in p for p in ex05._timing_problems("cold", r))


def test_first_call_reported_as_fastest_fails():
    r = run(compiled_fastest_s=2.0001, speedup=0.0041 / 2.0001)
    assert any("compiled_fastest_s" in p for p in ex05._timing_problems("cold", r))
    r = run(eager_fastest_s=0.0101, speedup=0.0101 / 0.00111)
    assert any("eager_fastest_s" in p for p in ex05._timing_problems("cold", r))


def test_honest_figures_pass_under_load_where_every_call_is_slow():
    events, t = [], 0.0
    for kind, first, steady in (("eager", 0.5, 0.2), ("compiled", 9.0, 0.05)):
        for i in range(6):
            d = first if i == 0 else steady * (1 + 0.3 * i)
            e = {"kind": kind, "t0": t + 0.03, "t1": t + 0.03 + d, "counts": True}
            if kind == "compiled":
                e |= {"frames": int(i == 0), "hits": 0, "misses": int(i == 0)}
            events.append(e)
            t = e["t1"]
    r = run(eager_first_s=0.52, eager_fastest_s=0.26, compiled_first_s=9.01, compiled_fastest_s=0.07,
            speedup=0.26 / 0.07)
    r["events"], r["end"] = events, t + 0.03
    assert ex05._timing_problems("cold", r) == []
    # The same records reject a fastest above the narrowest steady window, and a first call outside its own.
    assert ex05._timing_problems("cold", r | {"report": r["report"] | {"eager_fastest_s": 0.33}})
    assert ex05._timing_problems("cold", r | {"report": r["report"] | {"compiled_first_s": 8.9}})


# ------------------------------------------------ no student text in feedback

SECRET = "SECRET-MARKER-7f3a"


def test_student_strings_never_appear_in_verdict_messages():
    r = run(cache=SECRET, speedup=SECRET, eager_first_s=SECRET,
            boundary={"backend": SECRET, "fullgraph": SECRET, "dynamic": False, "inputs": SECRET * 3,
                      "diagnostics": [SECRET]})
    messages = (ex05._timing_problems("cold", r) + ex05._cache_speedup_problems("cold", r)
                + ex05._boundary_problems("cold", r))
    assert any("boundary['inputs']" in m for m in messages)
    assert any("torch.compile received 'inductor'" in m for m in messages)   # the grader's words are shown
    assert not any(SECRET in m for m in messages)


def test_errors_and_odd_reports_are_shown_only_as_short_printable_excerpts():
    class Ctx:
        def function_source(self, *a):
            return "def time_and_record(fn, x, backend):\n    return 1\n"

        def measure(self, method, payload):
            return self.reply

    ctx = Ctx()
    ctx.reply = {"load_error": None, "runs": {
        "cold": {"backend": "inductor", "error": "ValueError: " + "x" * 50 + SECRET + "\x1b[31m", "report": None},
        "warm": {"backend": "inductor", "error": None, "report": {SECRET: 1}},
        "eager": {"backend": "eager", "error": None, "report": run(backend=SECRET)["report"]},
    }}
    for verdict in ex05.grade(ctx):
        assert SECRET not in verdict.message and "\x1b" not in verdict.message
        assert "ValueError" in verdict.message and "lacks" in verdict.message
