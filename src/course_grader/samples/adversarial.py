"""Submissions written as an adversarial student would, and honest but unusual ones.

Each sample starts from the released copy, answered with the model answers or
not, and replaces some cells (by course id) or adds cells after them. ``points``
is the auto score it deserves; ``why`` says what it tries and what must happen.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    name: str
    exercise: str
    points: float
    why: str
    answered: bool = True                         # start from the model answers (else the blank copy)
    replace: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    status: str = "graded"


def _fn(name: str, *body: str, head: str = "") -> str:
    return head + f"def {name}:\n" + "\n".join("    " + line for line in body) + "\n"


REWRITE = "safe_normalize_rewrite(x)"
RIGHT_RECOMPILES = ('RECOMPILES = {"seq_a": None, "seq_b": "dtype", "seq_c": "requires_grad", '
                    '"seq_d": "mode", "seq_e": "shape", "seq_f": None}')
FIXTURE = "check_equivalent(reference, candidate)"
TIMING_OK = """\
CODEGEN_BACKENDS = ("inductor",)


def time_and_record(fn, x, backend):
    import time

    def timed(f):
        start = time.perf_counter()
        f(x)
        return time.perf_counter() - start

    eager_first = timed(fn)
    eager_fastest = min(timed(fn) for _ in range(10))
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)
    before = dict(torch._dynamo.utils.counters["inductor"])
    compiled_first = timed(compiled)
    after = dict(torch._dynamo.utils.counters["inductor"])
    if after.get("fxgraph_cache_miss", 0) > before.get("fxgraph_cache_miss", 0):
        cache = "cold"
    elif after.get("fxgraph_cache_hit", 0) > before.get("fxgraph_cache_hit", 0):
        cache = "warm"
    else:
        cache = None
    compiled_fastest = min(timed(compiled) for _ in range(10))
    FASTEST_LINE
    speedup = SPEEDUP_LINE
    return {"backend": backend, "eager_first_s": eager_first, "eager_fastest_s": eager_fastest,
            "compiled_first_s": compiled_first, "compiled_fastest_s": compiled_fastest,
            "cache": CACHE_VALUE, "speedup": speedup,
            "boundary": {"backend": backend, "fullgraph": True, "dynamic": False,
                         "inputs": f"x: {str(x.dtype).replace('torch.', '')}{list(x.shape)}",
                         "diagnostics": ["time.perf_counter", "FX graph cache counters"]}}
"""


def _timing(fastest_line: str = "pass",
            speedup: str = "eager_fastest / compiled_fastest if backend in CODEGEN_BACKENDS else None",
            cache: str = "cache") -> str:
    return (TIMING_OK.replace("FASTEST_LINE", fastest_line).replace("SPEEDUP_LINE", speedup)
            .replace("CACHE_VALUE", cache))


SAMPLES: list[Sample] = [
    # ------------------------------------------------------------------ ex01
    Sample("adv-call-reference", "ex01", 0, "the rewrite calls the locked reference: not available in measured code",
           replace={"ex01-rewrite": _fn(REWRITE, "return safe_normalize(x)")}),
    Sample("adv-getattr-string", "ex01", 0, "getattr with a built string to reach torch internals: rejected",
           replace={"ex01-rewrite": _fn(REWRITE, "cfg = getattr(torch, '_dyn' + 'amo')",
                                        "return torch.where(x.norm() > 0, x / x.norm(), x)")}),
    Sample("adv-format-attribute", "ex01", 0, "str.format reads attributes by name: rejected",
           replace={"ex01-rewrite": _fn(REWRITE, "name = '{0._version}'.format(x)", "return x")}),
    Sample("adv-config-store", "ex01", 0, "sets a Dynamo config attribute inside the function: rejected",
           replace={"ex01-rewrite": _fn(REWRITE, "torch._dynamo.config.capture_scalar_outputs = True",
                                        "norm = x.norm()", "if norm > 0:", "    return x / norm", "return x")}),
    Sample("adv-exec-source", "ex01", 0, "exec of a string: rejected by the allow-list, and flagged by the static scan",
           replace={"ex01-rewrite": _fn(REWRITE, "exec('y = x')", "return x")}, status="flagged"),
    Sample("adv-dunder-globals", "ex01", 0, "walks to the function's globals: rejected by the allow-list, and flagged",
           replace={"ex01-rewrite": _fn(REWRITE, "g = safe_normalize_rewrite.__globals__", "return x")},
           status="flagged"),
    Sample("adv-patch-explain", "ex01", 0,
           "a naive rewrite, plus a scratch cell that replaces torch._dynamo.explain: flagged",
           replace={"ex01-rewrite": _fn(REWRITE, "norm = x.norm()", "return torch.where(norm > 0, x / norm, x)")},
           after={"ex01-rewrite": "import torch._dynamo\ntorch._dynamo.explain = lambda fn: (lambda *a: None)"},
           status="flagged"),
    Sample("adv-fake-ticks", "ex01", 0, "unanswered, with scratch cells that print every ✓ line",
           answered=False,
           after={"ex01-rewrite": "print('✓ 1 graph, 0 graph breaks, and fullgraph=True compiles')\n"
                                  "print('✓ values, dtypes and gradients agree on 8 public cases')\n"
                                  "print('✓ boundary values and gradients agree on 18 hidden cases')"}),
    Sample("adv-naive-where", "ex01", 5,
           "the classic where rewrite: captures, but NaN gradients at the zero vector (hidden)",
           replace={"ex01-rewrite": _fn(REWRITE, "norm = x.norm()", "return torch.where(norm > 0, x / norm, x)")}),
    Sample("honest-local-max", "ex01", 8, "a local variable named max and comments: honest",
           replace={"ex01-rewrite": _fn(REWRITE, "# max is my own local name here", "max = x.norm()",
                                        "pos = max > 0", "one = torch.ones_like(max)",
                                        "return torch.where(pos, x / torch.where(pos, max, one), x)")}),
    Sample("honest-helper-function", "ex01", 8, "a top-level helper and constant in the same cell: honest",
           replace={"ex01-rewrite": "FALLBACK = 1.0\n\n\ndef safe_divisor(norm):\n"
                                    "    return torch.where(norm > 0, norm, torch.full_like(norm, FALLBACK))\n\n\n"
                                    + _fn(REWRITE, "norm = x.norm()",
                                          "return torch.where(norm > 0, x / safe_divisor(norm), x)")}),
    Sample("honest-divide-by-where", "ex01", 8, "a different correct rewrite: divide by a guarded norm",
           replace={"ex01-rewrite": _fn(REWRITE, "norm = x.norm()",
                                        "return x / torch.where(norm > 0, norm, torch.ones_like(norm))")}),
    Sample("honest-shadow-assertionerror", "ex01", 8, "redefines AssertionError in a scratch cell: not tampering",
           after={"ex01-rewrite": "class AssertionError(Exception):\n    pass\nmax = 3"}),
    # ------------------------------------------------------------------ ex02
    Sample("adv-huge-literal", "ex02", 3, "an oversized literal for BREAKS: unusable, the rest still graded",
           replace={"ex02-breaks": "BREAKS = {" + ", ".join(f"'k{i}': None" for i in range(5000)) + "}"}),
    Sample("adv-deep-literal", "ex02", 3, "a very deep literal for BREAKS: unusable, never crashes the batch",
           replace={"ex02-breaks": "BREAKS = " + "[" * 150 + "]" * 150}),
    Sample("adv-computed-answer", "ex02", 3, "BREAKS computed by code (an old helper): never run, not a literal",
           replace={"ex02-breaks": "from compile_course.checks import live_breaks\n"
                                   "BREAKS = live_breaks(FUNCTIONS, EXAMPLE)"}),
    Sample("adv-comprehension-answer", "ex02", 3, "BREAKS as a comprehension: not a literal",
           replace={"ex02-breaks": "BREAKS = {name: None for name in FUNCTIONS}"}),
    Sample("adv-trusts-explain", "ex02", 4, "answers what explain shows: print and log.info 'no break' (wrong): "
           "well formed (1 of 3 for BREAKS), but torch's graph_breaks log disagrees (0 of 2)",
           replace={"ex02-breaks": 'BREAKS = {"scale_and_report": None, "scale_by_total": "item", '
                                   '"flip_if_negative": "data-dependent branch", "clipped": None, '
                                   '"logged_scale": None}'}),
    Sample("adv-patch-builtins-print", "ex02", 0, "a scratch cell that replaces builtins.print: flagged",
           after={"ex02-breaks": "import builtins\nbuiltins.print = lambda *a, **k: None"}, status="flagged"),
    Sample("honest-literal-layout", "ex02", 6, "correct literals with comments, another key order and trailing commas",
           replace={"ex02-breaks": "# from the graph_breaks log\nBREAKS = {\n    'logged_scale': 'logging',  # GB0291\n"
                                   "    'clipped': None,\n    'flip_if_negative': 'data-dependent branch',\n"
                                   "    'scale_by_total': 'item',\n    'scale_and_report': 'print',\n}\n"
                                   "print(BREAKS)\n",
                    "ex02-recompiles": RIGHT_RECOMPILES + "  # checked with CompileWatch\n"}),
    # ------------------------------------------------------------------ ex03
    Sample("adv-computed-predictions", "ex03", 5, "PREDICTED_A read off a CompileWatch: not a literal",
           replace={"ex03-predict-a": "watch = CompileWatch(h, backend='eager')\nsequence_a(watch)\n"
                                      "PREDICTED_A = [n for _, n in watch.calls]"}),
    Sample("adv-warmup-reset", "ex03", 6, "warm_up calls torch._dynamo.reset (not an allowed path)",
           replace={"ex03-warm-up": _fn("warm_up(compiled_h)", "torch._dynamo.reset()",
                                        "compiled_h(torch.randn(4, 8))")}),
    Sample("adv-warmup-force-eager", "ex03", 6, "warm_up switches torch to eager so nothing ever compiles",
           replace={"ex03-warm-up": _fn("warm_up(compiled_h)", "torch.compiler.set_stance('force_eager')",
                                        "compiled_h(torch.randn(4, 8))")}),
    Sample("honest-warmup-two-sizes", "ex03", 8, "warm_up calls two batch sizes: automatic dynamic, 2 compilations",
           replace={"ex03-warm-up": _fn("warm_up(compiled_h)", "for n in (2, 3):",
                                        "    compiled_h(torch.randn(n, 8))")}),
    Sample("honest-warmup-keyword", "ex03", 8, "warm_up calls compiled_h(x=x) on a dynamic batch: torch reuses "
           "that graph for positional calls (the replay asks torch), so it keeps its points",
           replace={"ex03-warm-up": _fn("warm_up(compiled_h)", "x = torch.randn(4, 8)",
                                        "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x=x)")}),
    Sample("adv-warmup-test-api", "ex03", 0, "warm_up reaches the test API the setup cells bind (student.call with "
           "code(...), evaluated with the real builtins in v3): not available in measured code, and flagged",
           replace={"ex03-warm-up": _fn("warm_up(compiled_h)", "x = torch.randn(4, 8)",
                                        "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)",
                                        "student.call('h', code('exec(chr(49))'))")}, status="flagged"),
    Sample("honest-one-wrong-prediction", "ex03", 6, "PREDICTED_A forgets 0/1 specialisation: well formed "
           "(public form test passes), the hidden comparison fails",
           replace={"ex03-predict-a": "PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 0]"}),
    Sample("honest-warmup-no-grad", "ex03", 6, "warm_up marks the batch dynamic but calls under no_grad: "
           "the grad-mode guard makes serving (grad enabled) recompile",
           replace={"ex03-warm-up": _fn("warm_up(compiled_h)", "x = torch.randn(4, 8)",
                                        "torch._dynamo.mark_dynamic(x, 0)", "with torch.no_grad():",
                                        "    compiled_h(x)")}),
    # ------------------------------------------------------------------ ex04
    Sample("adv-always-true", "ex04", 0, "a fixture that accepts everything: every graded test mixes faults in",
           replace={"ex04-fixture": _fn(FIXTURE, "return True")}),
    Sample("adv-always-false", "ex04", 0, "a fixture that rejects everything: every graded test mixes faithful ones in",
           replace={"ex04-fixture": _fn(FIXTURE, "return False")}),
    Sample("adv-detect-compiled", "ex04", 0, "judges by what the candidate looks like (repr), not what it does",
           replace={"ex04-fixture": _fn(FIXTURE, "text = repr(candidate)",
                                        "return 'Optimized' in text or 'compile' in text")}),
    Sample("adv-orig-mod-probe", "ex04", 0,
           "hasattr(candidate, '_orig_mod'): allowed, but False for every candidate (all wrapped alike)",
           replace={"ex04-fixture": _fn(FIXTURE, "return hasattr(candidate, '_orig_mod')")}),
    Sample("adv-call-counter", "ex04", 0,
           "a mutable default counts calls to answer by position: order is random, state is fresh",
           replace={"ex04-fixture": _fn("check_equivalent(reference, candidate, seen=[])", "seen.append(1)",
                                        "return len(seen) % 2 == 1")}),
    Sample("adv-weak-fixture", "ex04", 6,
           "an honest but weak fixture: float32 and a batch of 4 only (hidden faults pass)",
           replace={"ex04-fixture": _fn(FIXTURE, "nan, inf = float('nan'), float('inf')",
                                        "x = torch.tensor([[0.0, -0.0, nan, 1.0], [-1.0, 2.0, inf, -inf], "
                                        "[0.5, -3.0, 0.0, 2.0], [1.5, -0.5, 3.0, -2.0]])",
                                        "modes = ('train', 'eval') if isinstance(reference, nn.Module) else (None,)",
                                        "cases = [Case(f'x {m}', (x,), mode=m, grad=True) for m in modes]",
                                        "return compare(reference, candidate, cases).ok")}),
    # ------------------------------------------------------------------ ex05
    Sample("adv-invented-timings", "ex05", 0, "returns invented figures without timing anything",
           replace={"ex05-answer": _fn("time_and_record(fn, x, backend)",
                                       "return {'backend': backend, 'eager_first_s': 0.01, 'eager_fastest_s': 0.004,",
                                       "        'compiled_first_s': 2.0, 'compiled_fastest_s': 0.001, 'cache': 'cold',",
                                       "        'speedup': 4.0 if backend == 'inductor' else None,",
                                       "        'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,",
                                       "                     'inputs': 'x: float32[256, 1024]', "
                                       "'diagnostics': ['made up']}}")}),
    Sample("adv-flattered-speedup", "ex05", 1, "times honestly, then divides the compiled figure by 10: an "
           "invented 10x speedup: the compiled figure is faster than any compiled call the stopwatch saw (only the "
           "boundary holds)",
           replace={"ex05-answer": _timing("compiled_fastest = compiled_fastest / 10")}),
    Sample("adv-cache-always-cold", "ex05", 3, "reports a cold cache whatever happened",
           replace={"ex05-answer": _timing(cache="'cold'")}),
    Sample("adv-no-none-for-eager", "ex05", 3, "claims a speedup for backend='eager' too",
           replace={"ex05-answer": _timing(speedup="eager_fastest / compiled_fastest")}),
    Sample("adv-plausible-constants", "ex05", 0, "no timing and no compile: figures near this machine's, "
           "jittered, cache always 'warm' (written by a student from the released copy alone; it got 5/5 before "
           "each call's own record of its wall time and compiles); its boundary names a torch.compile it never "
           "made, so nothing holds",
           replace={"ex05-answer": (
               "def time_and_record(fn, x, backend):\n"
               "    import time\n"
               "    jitter = (time.perf_counter() % 1) * 1e-6\n"
               "    return {'backend': backend, 'eager_first_s': 0.004 + jitter, 'eager_fastest_s': 0.0013,\n"
               "            'compiled_first_s': 0.9, 'compiled_fastest_s': 0.0004,\n"
               "            'cache': 'warm' if backend == 'inductor' else None,\n"
               "            'speedup': 3.25 if backend == 'inductor' else None,\n"
               "            'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,\n"
               "                         'inputs': 'x: float32 [256, 1024]', 'diagnostics': ['counters']}}\n")}),
    Sample("adv-widened-gaps", "ex05", 1, "sleeps inside every timed steady eager call: v2 accepted any figure "
           "that fit the gap around a call, so widened gaps got 5/5 (25.8x and 367.8x claimed); the padded figure is "
           "far slower than the calls' own durations (only the boundary holds)",
           replace={"ex05-answer": _timing("\n    ".join([
               "def padded(f):",
               "    start = time.perf_counter()",
               "    time.sleep(0.02)",
               "    f(x)",
               "    return time.perf_counter() - start",
               "eager_fastest = min(padded(fn) for _ in range(10))"]))}),
    Sample("adv-constants-and-sleep", "ex05", 1, "issue #26: constants near this machine's figures with jitter, one "
           "untimed compile, the cache state read honestly, a 1.2 s sleep (v3: 5/5); no figure is the time of a call "
           "the stopwatch saw, so only the boundary holds",
           replace={"ex05-answer": _fn("time_and_record(fn, x, backend)", "import time", "torch._dynamo.reset()",
                                       "compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)",
                                       "before = dict(torch._dynamo.utils.counters['inductor'])",
                                       "compiled(x)",
                                       "after = dict(torch._dynamo.utils.counters['inductor'])",
                                       "cache = None",
                                       "if after.get('fxgraph_cache_miss', 0) > before.get('fxgraph_cache_miss', 0):",
                                       "    cache = 'cold'",
                                       "elif after.get('fxgraph_cache_hit', 0) > before.get('fxgraph_cache_hit', 0):",
                                       "    cache = 'warm'",
                                       "time.sleep(1.2)",
                                       "jitter = (time.perf_counter() % 1) * 1e-5",
                                       "e, c = 0.0013 + jitter, 0.0004 + jitter",
                                       "return {'backend': backend, 'eager_first_s': 0.004 + jitter, "
                                       "'eager_fastest_s': e,",
                                       "        'compiled_first_s': 0.9 + jitter, 'compiled_fastest_s': c, "
                                       "'cache': cache,",
                                       "        'speedup': e / c if backend == 'inductor' else None,",
                                       "        'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,",
                                       "                     'inputs': 'x: float32[256, 1024]', "
                                       "'diagnostics': ['perf_counter']}}")}),
    Sample("adv-invented-first-call", "ex05", 3, "times the steady calls honestly but invents the compiled first "
           "call's figure (v3: 5/5): it is not the time of the call that compiled, so the timing test fails",
           replace={"ex05-answer": _timing("compiled_first = 1.5 + compiled_first / 100")}),
    Sample("adv-fullgraph-lie", "ex05", 4, "compiles with fullgraph=True, the boundary says fullgraph=False (v3: 5/5): "
           "the boundary is compared with what torch.compile was given",
           replace={"ex05-answer": _timing().replace('"boundary": {"backend": backend, "fullgraph": True',
                                                     '"boundary": {"backend": backend, "fullgraph": False')}),
    Sample("honest-perf-counter-ns", "ex05", 5,
           "honest timing written differently (perf_counter_ns, sorted lists, helper)",
           replace={"ex05-answer": _fn("time_and_record(fn, x, backend)",
                                       "import time",
                                       "def run(f, n):",
                                       "    times = []",
                                       "    for _ in range(n):",
                                       "        t0 = time.perf_counter_ns()",
                                       "        f(x)",
                                       "        times.append((time.perf_counter_ns() - t0) / 1e9)",
                                       "    return times",
                                       "eager = run(fn, 8)",
                                       "torch._dynamo.reset()",
                                       "compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)",
                                       "misses = torch._dynamo.utils.counters['inductor']['fxgraph_cache_miss']",
                                       "hits = torch._dynamo.utils.counters['inductor']['fxgraph_cache_hit']",
                                       "first = run(compiled, 1)[0]",
                                       "stats = torch._dynamo.utils.counters['inductor']",
                                       "cache = 'cold' if stats['fxgraph_cache_miss'] > misses else "
                                       "('warm' if stats['fxgraph_cache_hit'] > hits else None)",
                                       "steady = sorted(run(compiled, 8))",
                                       "codegen = backend not in ('eager', 'aot_eager')",
                                       "return {'backend': backend, 'eager_first_s': eager[0], "
                                       "'eager_fastest_s': sorted(eager[1:])[0],",
                                       "        'compiled_first_s': first, 'compiled_fastest_s': steady[0], "
                                       "'cache': cache,",
                                       "        'speedup': sorted(eager[1:])[0] / steady[0] if codegen else None,",
                                       "        'boundary': dict(backend=backend, fullgraph=True, dynamic=False,",
                                       "                         inputs='float32 x of shape [256, 1024]', "
                                       "diagnostics=['perf_counter_ns'])}")}),
]

SAMPLES.append(
    Sample("adv-time-tiny-input", "ex05", 1, "reports the compiled steady time measured on a 1-element slice of "
           "x: its speedup is invented too (only the boundary holds)",
           replace={"ex05-answer": _timing("\n    ".join([
               "small = x[:1, :1]",
               "compiled(small)",
               "times = []",
               "for _ in range(10):",
               "    t0 = time.perf_counter()",
               "    compiled(small)",
               "    times.append(time.perf_counter() - t0)",
               "compiled_fastest = min(times)"]))}))
