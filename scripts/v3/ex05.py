"""One-off migration of ex05's solution notebook to grader v3 (kept for the record of the change).

Run on a clean notebook: ``git checkout solutions/ex05_timing_boundary.ipynb`` first.

The tests ask the student's ``time_and_record`` for three reports from one fresh process
(inductor, inductor again, eager) and check them against the grader's own measurement of
``fused`` (``reference.time``, a process that runs no student code):

* fastest steady calls within a factor of 5 of the grader's (see FACTOR in the cells);
* the second inductor report's cache is ``"warm"``: the first compile in that process left its FX
  graph in the cache, so that is known without believing the child;
* speedup is the report's own eager/compiled ratio and within the factor of the grader's ratio;
  None (and cache None) for ``backend="eager"``;
* reports of separate runs cannot repeat every figure to the last digit (they were not measured).
"""
import nbformat

P = "solutions/ex05_timing_boundary.ipynb"
nb = nbformat.read(P, as_version=4)
cells = {c.get("id"): c for c in nb.cells}

INTRO = '''# Exercise 5: honest timing and a version boundary

**What you will practise:** measuring a compiled function's first call apart from its steady state,
stating which compile cache the first call used, claiming a speedup only where one can exist, and
recording the version boundary the numbers hold under. You write the timing code yourself.

**Before you start:** Lesson 16, "Keep first-call capture and compilation overhead separate" and
"Preserve a readable reference and version boundary"; the common error "backend='eager' is
presented as a speed benchmark".

**Points:** 5, from three tests, each worth all its points or none: `ex05-test-timing` 2,
`ex05-test-cache-speedup` 2, `ex05-test-boundary` 1. No test asserts that anything is fast: the tests
check that what you report is honest and complete.

**How it is graded:** the grader takes the source of `time_and_record` from your answer cell and
runs it in a separate process, three times in a row: `time_and_record(fused, X, "inductor")`, the
same again (by then inductor's FX graph cache holds the graph the first call compiled, so the second
compile hits it: `"warm"`), and `time_and_record(fused, X, "eager")`. It then times `fused` itself,
eagerly and compiled, in a process that runs none of your code, and compares: each fastest steady
call you report, and your speedup, must be within a factor of 5 of its own figure. That factor is
wide enough for a busy machine (the fastest of many calls moves far less than that under load) and
narrow enough that a speedup that was not measured shows. The self-checks below run the same tests
here, on this notebook. The function may use `torch`, `time` (`import time` is allowed),
`torch._dynamo.reset`, `torch._dynamo.utils.counters`, its parameters and its own local variables
(and helpers or constants defined in the same cell).'''

SETUP = '''from compile_course import start; start()

import time  # noqa: F401  (for your own timing while you work)
import torch
from compile_course import VersionBoundary
from compile_course.testing import Namespace, code, passed

# The test cells ask `student` about your function, and `reference` for the course's own timing of
# `fused`. Here both are this notebook; at grading, the grader (`reference` then runs no code of yours).
student = Namespace(globals())
reference = Namespace(globals())'''

# Each test cell asks the same question; at grading it is measured once and the reply reused.
ASK = '''# Your function, three times in one process: inductor, inductor again (now warm), then eager.
BACKENDS = ("inductor", "inductor", "eager")
results = student.call_each("time_and_record", *[(code("fused"), code("X"), b) for b in BACKENDS])
for backend, result in zip(BACKENDS, results):
    assert result.ok, f"time_and_record(fused, X, {backend!r}) raised {result.error}"
    assert isinstance(result.value, dict), f"time_and_record(fused, X, {backend!r}) should return a dict"
reports = [result.value for result in results]'''

FIGURES = '''FIGURES = ("eager_first_s", "eager_fastest_s", "compiled_first_s", "compiled_fastest_s")'''

NOT_REPEATED = '''measured = [tuple(r.get(k) for k in FIGURES) for r in reports]
assert not all(type(v) in (int, float) for row in measured for v in row) or len(set(measured)) == len(measured), (
    "separate runs reported exactly the same figures: times that were measured never repeat to the last digit")'''

TIMING = ASK + "\n" + FIGURES + '''
for backend, report in zip(BACKENDS, reports):
    for key in FIGURES:
        value = report.get(key)
        assert type(value) in (int, float) and 0 < value < 1e6, (
            f"{backend}: report[{key!r}] should be a positive number of seconds")
''' + NOT_REPEATED + '''
# The grader's own timing of fused (at grading: in a process that runs no code of yours). On a loaded
# 2-core machine an honest fastest call lands within ~3x of it; a factor of 5 leaves room for that.
FACTOR = 5
eager = reference.time("fused", code("X"))
compiled = {b: reference.time("fused", code("X"), backend=b) for b in ("inductor", "eager")}
for backend, report in zip(BACKENDS, reports):
    for kind, grader in (("eager", eager), ("compiled", compiled[backend])):
        fastest, first = report[f"{kind}_fastest_s"], report[f"{kind}_first_s"]
        assert grader.fastest_s / FACTOR <= fastest <= grader.fastest_s * FACTOR, (
            f"{backend}: report['{kind}_fastest_s'] is {fastest:.6f} s, but the grader's fastest steady {kind} call "
            f"took {grader.fastest_s:.6f} s; an honest figure is within a factor of {FACTOR} of it")
        assert first >= grader.fastest_s / FACTOR, (
            f"{backend}: report['{kind}_first_s'] is {first:.6f} s, shorter than any steady {kind} call can take "
            f"(the grader's fastest took {grader.fastest_s:.6f} s)")
    assert report["compiled_first_s"] > report["compiled_fastest_s"], (
        f"{backend}: the compiled first call includes capture and compilation, so it takes longer than the "
        "fastest steady call; time the first call apart, right after torch._dynamo.reset() and torch.compile")
passed(f"first calls and fastest steady calls fit the grader's own timing of fused (within a factor of {FACTOR})")'''

CACHE_SPEEDUP = ASK + '''
first, again, eager_backend = reports
for n, report in (("first", first), ("second", again)):
    assert report.get("cache") in ("cold", "warm"), (
        f"the {n} inductor call: its compiled first call misses or hits inductor's FX graph cache, so cache is "
        f"'cold' or 'warm'; you reported {report.get('cache')!r:.40}")
    e, c, s = (report.get(k) for k in ("eager_fastest_s", "compiled_fastest_s", "speedup"))
    assert all(type(v) in (int, float) and 0 < v < 1e6 for v in (e, c, s)) and abs(s - e / c) <= 1e-9 * (e / c), (
        f"the {n} inductor call: report['speedup'] should be eager_fastest_s / compiled_fastest_s "
        "(fastest steady calls, first calls excluded)")
assert again["cache"] == "warm", (
    "the second inductor call compiles the graph the first one left in inductor's FX graph cache, so its compiled "
    f"first call hits it: 'warm', not {again['cache']!r:.40}. Read the counters again after that call (and "
    "reset Dynamo before compiling, so that the first call compiles)")
# The grader's own ratio (at grading: measured in a process that runs no code of yours).
FACTOR = 5
eager, compiled = reference.time("fused", code("X")), reference.time("fused", code("X"), backend="inductor")
speedup = eager.fastest_s / compiled.fastest_s
for n, report in (("first", first), ("second", again)):
    assert speedup / FACTOR <= report["speedup"] <= speedup * FACTOR, (
        f"the {n} inductor call: you report a speedup of {report['speedup']:.2f}x, the grader measured "
        f"{speedup:.2f}x; an honest figure is within a factor of {FACTOR} of it")
assert eager_backend.get("speedup", 0) is None, "backend='eager' generates no code: report['speedup'] must be None"
assert eager_backend.get("cache", 0) is None, (
    "backend='eager' does not use inductor's FX graph cache: report['cache'] must be None")
passed("cache condition from inductor's counters (warm when compiled again); speedup from the fastest steady calls, "
       "near the grader's, and None for backend='eager'")'''

BOUNDARY = ASK + "\n" + FIGURES + '''
for backend, report in zip(BACKENDS, reports):
    assert report.get("backend") == backend, f"report['backend'] should be the backend argument ({backend!r})"
    b = report.get("boundary")
    assert isinstance(b, dict), "report['boundary'] should be a dict (backend, fullgraph, dynamic, inputs, diagnostics)"
    assert b.get("backend") == backend, f"the boundary must name the backend you compiled with ({backend!r})"
    assert isinstance(b.get("fullgraph"), bool) and isinstance(b.get("dynamic"), bool), (
        "state fullgraph and dynamic explicitly (True or False) in the boundary")
    assert all(s in str(b.get("inputs")) for s in ("float32", "256", "1024")), (
        "boundary['inputs'] should name x's dtype and shape")
    assert isinstance(b.get("diagnostics"), list) and b["diagnostics"] and all(
        isinstance(d, str) and d for d in b["diagnostics"]), (
        "list the diagnostics your numbers come from (boundary['diagnostics'])")
# A boundary records what measured numbers hold under.
''' + NOT_REPEATED + '''
passed("the boundary records the backend, fullgraph, dynamic, the input contract and the diagnostics")'''

THREADS = """# Time on one thread, as the grader does. On a busy machine a call split over several threads waits
# for whichever thread is not running, so its "fastest" call would measure the load, not the code.
torch.set_num_threads(1)"""

TASK_END = '''The cell after it runs your function once with inductor (the only cold compile in these
exercises: allow up to a minute).'''
TASK_END_V3 = '''The cell after it runs your function once with inductor (the only cold compile in these
exercises: allow up to a minute). The self-checks at the end run it again, a few times.'''

cells["ex05-intro"].source = INTRO
cells["ex05-setup"].source = SETUP
cells["ex05-setup"].metadata["course"]["setup"] = True
cells["ex05-workload"].metadata["course"]["setup"] = True
# Not setup (the grader's children are single-threaded already, and its own process is left alone):
# the notebook times single-threaded too, so its self-checks measure what the grader measures.
threads = nbformat.v4.new_code_cell(THREADS)
threads.id = "ex05-threads"
threads.metadata["course"] = {"id": "ex05-threads", "kind": "locked"}
nb.cells.insert(nb.cells.index(cells["ex05-workload"]) + 1, threads)
task = cells["ex05-task"]
assert TASK_END in task.source
task.source = task.source.replace(TASK_END, TASK_END_V3)
cells["ex05-answer"].metadata["course"]["allow"] = ["torch._dynamo.reset", "torch._dynamo.utils.counters"]
cells["ex05-test-timing"].source = TIMING
cells["ex05-test-cache-speedup"].source = CACHE_SPEEDUP
cells["ex05-test-boundary"].source = BOUNDARY
for cid in ("ex05-test-timing", "ex05-test-cache-speedup", "ex05-test-boundary"):
    assert "nbval-ignore-output" not in cells[cid].metadata.get("tags", [])  # their ✓ lines hold no measured number
for c in nb.cells:
    if c.cell_type == "code":
        c.outputs, c.execution_count = [], None
nbformat.write(nb, P)
