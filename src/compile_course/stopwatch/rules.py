"""What the stopwatch's records allow a report to claim: the windows a figure must lie in, the
steady calls that may be faster than a "fastest" figure, and the calls that must have done the same
work (the rules, and the measurements behind their constants: the package docstring and below).
"""

from __future__ import annotations

from .recorder import CHANGED_DURING_CALL

CLOCK_SLACK_S = 2e-6       # perf_counter readings a few instructions apart
MIN_STEADY_CALLS = 5       # a "fastest steady call" out of fewer calls is not a steady state
# An honest fastest figure lies inside one steady call's window, and at most a quarter of the steady calls are
# surely faster than it (their whole window lies below it): none when it is the minimum of every steady call,
# as the exercise asks, whatever the load (it compares readings of one clock, not durations across moments; a
# window is the call's own span and what a timer adds: SPAN_FACTOR below); at most the calls it was not taken
# over otherwise, so a routine may leave a quarter of its steady calls out (warm-up calls) and keep its figure.
# A figure with more below it is not the fastest (the former rule, up to 3x the fastest call's own duration, let
# a slower call pass as the fastest). Measured with the former windows (gaps alone) on the shared 2-core machine
# (load 8 to 19): scripts/bench_stopwatch.py, 10 runs x 3 reports with and without two CPU hogs: the bundled
# honest routines 0 surely faster calls in all 180 figures; routines leaving 5 of 20 out at most
# 3; adv-slow-call-as-fastest's eager figure 8 to 10 of 20 on average, refused in 59 of 60 reports. The honest
# samples graded by `course grade` 3 times beside two hogs: 0 in all 90 checks (figure / fastest span at most
# 1.005). What the share lets a figure be: median 1.03 to 1.06x the fastest span, worst 2.1x under hogs.
FASTER_SHARE = 0.25
# What a timer around a call may read above the call's own span (the stand-in's entry to its exit): the routine's
# timer itself (a function call and a perf_counter read: microseconds) and the moments the machine ran something
# else in between. Measured on the shared 2-core machine beside two `python -c "while 1: pass"` hogs with
# scripts/bench_stopwatch.py, 10 runs x 3 reports of the bundled honest routines (model answer,
# honest-perf-counter-ns, honest-compiler-reset, on x.clone(), two that leave a quarter out: 180 reports, 720
# figures): a figure over its call's own span by 1.2 to 2.6 us (median), 12 us at worst, but for one first
# compiled call whose gap was interrupted for 8.7 ms (ratio 1.065); a fastest figure at most 1.004x its call's span.
# An earlier 5-run sample: 338 us over a 1.4 ms steady call (ratio 1.026), 411 us over a first eager call, 3.5 ms
# over a first compiled call. A fastest figure is the minimum of many readings, so one interrupted gap does not
# reach it: SPAN_FACTOR leaves ten times the worst ratio seen, SPAN_ALLOWANCE_S room for a timer written with more
# steps; a padded timer gains at most that (the second adversarial review's ex05-sleepgap, a 20 ms sleep inside
# each timer, read 3.8x its call at the median: refused in 30 of 30 reports). A first figure is one reading: a
# preemption or a garbage collection in its gap (a full one takes 180 ms in a process that has compiled) cannot be
# averaged away, and nothing is computed from it (the speedup is of fastest figures), so it may be FIRST_ALLOWANCE_S
# over (a scheduler's wait under this machine's load), within its gap as before. `course grade` beside two hogs,
# 3 runs: correct, honest-perf-counter-ns, honest-compiler-reset and the review's ex05-honest 5/5 each time; its
# ex05-sleepgap, -values and -raising 1/5 each time. (Its ex05-warmup1..4, 20 untimed calls then 5 timed, leave
# more than a quarter out: 1/5 in 2 of 3 runs, as with the rule before this one, FASTER_SHARE.)
SPAN_FACTOR = 1.25
SPAN_ALLOWANCE_S = 300e-6
FIRST_ALLOWANCE_S = 0.05


def most_read(own: float, first: bool = False) -> float:
    """The most a timer around a call whose own span is ``own`` may read: the span, and the timer's own work
    (a first call's: a single reading, with room for the machine's interruptions, ``FIRST_ALLOWANCE_S``)."""
    return own * SPAN_FACTOR + (FIRST_ALLOWANCE_S if first else SPAN_ALLOWANCE_S)


def _windows(calls: list[dict], end: float) -> list[tuple[float, float, float]]:
    """For each call: (the least a timer around it can read: the stand-in's own span; the most it may read: that
    span and the timer's own work (:func:`most_read`), within the gap; the gap: from the exit of the call before it
    to the entry of the call after it, which holds whatever the routine ran there besides)."""
    out = []
    for i, c in enumerate(calls):
        before = calls[i - 1]["exit"] if i else 0.0
        after = calls[i + 1]["enter"] if i + 1 < len(calls) else end
        own, gap = c["exit"] - c["enter"], after - before
        out.append((own, min(gap, most_read(own)), gap))
    return out


def _inside(figure: float, window: tuple[float, float, float]) -> bool:
    own, most, _ = window
    return own - CLOCK_SLACK_S <= figure <= most + CLOCK_SLACK_S


def _padded(figure: float, windows: list[tuple[float, float, float]]) -> bool:
    """The figure fits a gap around a call, but not the call itself: the timer held other work."""
    return any(own - CLOCK_SLACK_S <= figure <= gap + CLOCK_SLACK_S for own, _, gap in windows)


PADDED = ("it took longer than that call itself, so your timer held other work besides the call (a sleep, other "
          "calls, printing); start the clock just before the call and read it just after")


def _problem(label: str, figure, first: bool, windows: list[tuple[float, float, float]]) -> str | None:
    if not windows:
        return f"report[{label!r}]: no such call was made of the function you were given, so it was not measured"
    if first:
        own, _, gap = windows[0]
        if _inside(figure, (own, min(gap, most_read(own, first=True)), gap)):
            return None
        if _padded(figure, windows[:1]):
            return (f"report[{label!r}] ({figure:.6f} s) is not the time of the first such call of the function "
                    f"you were given: {PADDED}")
        return (f"report[{label!r}] ({figure:.6f} s) is not the time of the first such call of the function "
                "you were given: it was not measured in that call")
    steady = windows[1:]
    if len(steady) < MIN_STEADY_CALLS:
        return (f"report[{label!r}]: {len(steady)} steady call(s) after the first; time at least "
                f"{MIN_STEADY_CALLS} and report the fastest")
    if not any(_inside(figure, w) for w in steady):
        if _padded(figure, steady):
            return (f"report[{label!r}] ({figure:.6f} s) is not the time of a steady call of the function you were "
                    f"given: {PADDED.replace('that call', 'any of those calls')}")
        return (f"report[{label!r}] ({figure:.6f} s) is not the fastest of the steady calls made of the function "
                "you were given: it was not measured in those calls")
    if surely_faster(figure, steady) > allowed_faster(len(steady)):
        return (f"report[{label!r}] ({figure:.6f} s) is not the fastest of the steady calls made of the function "
                "you were given: more than a quarter of those calls took less time than it, read by any timer "
                "around them; time every call, untimed warm-up calls included (they are steady calls too), "
                "and report the minimum of the steady calls' times")
    return None


def surely_faster(figure: float, steady: list[tuple[float, float, float]]) -> int:
    """How many of the steady calls (``_windows``) a timer around them would have read below ``figure``: the most
    it may read (the call's own span and the timer's own work, within the gap) is below it."""
    return sum(most + CLOCK_SLACK_S < figure for _, most, _ in steady)


def allowed_faster(steady_calls: int) -> int:
    """How many of that many steady calls may be surely faster than an honest fastest figure: those a routine
    left out of its minimum, up to ``FASTER_SHARE`` of them."""
    return int(steady_calls * FASTER_SHARE)


FIGURES = ("eager_first_s", "eager_fastest_s", "compiled_first_s", "compiled_fastest_s")


def unmeasured(report: dict, timeline: dict, expected_args: list | None = None,
               figures: tuple[str, ...] = FIGURES) -> list[str]:
    """Why the report's four figures (``eager_first_s`` ... ``compiled_fastest_s``) were not measured in the
    calls the stopwatch saw; ``[]`` when they were. The messages name the student's own figures only.

    * no call raised (:func:`raised`), and all ran with the same torch thread count and grad mode
      (:func:`unequal_threads`, :func:`unequal_grad_modes`);
    * with ``expected_args`` (as ``describe_arg``): every call was made on arguments of that form, and its
      tensors were the very tensors the routine was given, unchanged, or unchanged copies of them (``given``);
    * eager figures: the first eager call, and the fastest of at least ``MIN_STEADY_CALLS`` after it (no more
      than ``FASTER_SHARE`` of them surely faster than it: :func:`surely_faster`), each within a call's own
      span and what a timer around it adds (:func:`most_read`);
    * compiled figures: the calls of the functions ``torch.compile`` handed out, the first of which must
      have compiled (Dynamo made a graph during it), likewise.
    """
    calls = timeline["calls"]
    problems = []
    if why := raised(calls):
        problems.append(why)
    if why := unequal_threads(calls):
        problems.append(why)
    if why := unequal_grad_modes(calls):
        problems.append(why)
    if expected_args is not None:
        if any(c["args"] != expected_args or c["keywords"] for c in calls):
            problems.append("the function you were given was called on other inputs than the ones you were given: "
                            "time it on x")
        elif not all(c["given"] is True for c in calls):
            problems.append("the function you were given was called on other values than x's (a tensor of x's "
                            "dtype and shape, but not x), or x was changed while your function ran: time it on x "
                            "itself (or x.clone()), and leave x as it was given")
    eager = [c for c in calls if c["kind"] == "eager"]
    compiled = [c for c in calls if c["kind"] == "compiled"]
    all_windows = dict(zip(map(id, calls), _windows(calls, timeline["end"]), strict=True))
    eager_w = [all_windows[id(c)] for c in eager]
    compiled_w = [all_windows[id(c)] for c in compiled]
    if not compiled:
        problems.append("the function you were given was never called through torch.compile(fn, ...): "
                        "no compiled call was timed")
    elif not compiled[0]["graphs"] and "compiled_first_s" in figures:
        problems.append("the first compiled call compiled nothing (was it compiled before, untimed, or "
                        "without torch._dynamo.reset()?): the first call that compiles is the one to time")
    for label, first, windows in (("eager_first_s", True, eager_w), ("eager_fastest_s", False, eager_w),
                                  ("compiled_first_s", True, compiled_w),
                                  ("compiled_fastest_s", False, compiled_w)):
        if label not in figures:
            continue
        figure = report.get(label)
        if type(figure) not in (int, float):
            problems.append(f"report[{label!r}] should be a number of seconds")
            continue
        why = _problem(label, figure, first, windows)
        if why:
            problems.append(why)
    return problems


def unequal_threads(calls: list[dict]) -> str | None:
    """Why the calls' figures are no comparison (they ran with different torch thread counts), or None."""
    counts = sorted({c["threads"] for c in calls})
    if len(counts) < 2 and CHANGED_DURING_CALL not in counts:
        return None
    shown = " and ".join("a count changed during the call" if n == CHANGED_DURING_CALL else str(n) for n in counts)
    return (f"the calls of the function you were given ran with different torch thread counts ({shown}; "
            "torch.set_num_threads): figures taken under different thread counts are not a comparison; time "
            "every call with the threads the run was given")


def raised(calls: list[dict]) -> str | None:
    """Why no figure holds when a call raised, or None."""
    names = sorted({c["raised"] for c in calls if c["raised"] is not None})
    if not names:
        return None
    return (f"a call raised: {sum(c['raised'] is not None for c in calls)} call(s) of the function you were given "
            f"raised ({', '.join(names[:3])}), and a call that raised did not do the work, so no figure may be taken "
            "over it; time calls that return (no torch.compiler.set_stance that makes them fail, no exception "
            "caught around them)")


def unequal_grad_modes(calls: list[dict]) -> str | None:
    """Why the calls' figures are no comparison (some ran under torch.no_grad(), some not), or None."""
    if len({c["grad"] for c in calls}) < 2:
        return None
    return ("the calls of the function you were given ran under different grad modes (some under torch.no_grad() "
            "or torch.inference_mode(), some not): the eager and compiled calls must do the same work; time every "
            "call under the same grad mode")


def compiled_with(timeline: dict) -> dict | None:
    """The options of the ``torch.compile`` call whose function made the first compiled call, or None."""
    first = next((c for c in timeline["calls"] if c["kind"] == "compiled"), None)
    return None if first is None else timeline["compiles"][first["compile"]]
