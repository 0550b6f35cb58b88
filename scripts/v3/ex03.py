"""One-off migration of ex03's solution notebook to grader v3 (kept for the record of the change).

Run on a clean notebook (``git checkout solutions/ex03_predict_recompiles.ipynb`` first).
"""
import nbformat

P = "solutions/ex03_predict_recompiles.ipynb"
nb = nbformat.read(P, as_version=4)
cells = {c.get("id"): c for c in nb.cells}


def replace(cell_id: str, old: str, new: str) -> None:
    source = cells[cell_id].source
    assert source.count(old) == 1, (cell_id, old)
    cells[cell_id].source = source.replace(old, new)


POINTS_OLD = """**Points:** 8, from three tests, each worth all its points or none: `ex03-test-a` 3 (every one of
the 8 predictions of sequence A must match), a hidden test worth 3 (all 6
predictions of sequence B must match) and `ex03-test-warm-up` 2. Write your predictions
*before* you run the verification cells: the point is to find out where your model of guards is wrong.
Predictions are **literal lists** (`PREDICTED_A = [...]`): the grader reads them without running
your code and compares them with a `CompileCounter` it runs itself. `warm_up` is run by the grader
in a separate process: it may use `torch` (including `torch._dynamo.mark_dynamic`), its parameter
and its own local variables."""

POINTS_NEW = """**Points:** 8, from four tests, each worth all its points or none: `ex03-test-a` 1 (`PREDICTED_A`
is a list of 8 counts; it does not say whether they are right), a hidden test worth 2 (every one of
the 8 predictions of sequence A must match), a hidden test worth 3 (all 6 predictions of sequence B
must match) and `ex03-test-warm-up` 2. Write your predictions *before* you run the verification
cells: the point is to find out where your model of guards is wrong. Predictions are **literal
lists** (`PREDICTED_A = [...]`): the grader reads them without running your code and compares them
with torch's own count (`new_compilations`, below, which uses a `CompileWatch`), made in a process
that runs none of your code. `warm_up` is run by the grader in a separate process: it may use
`torch` (including `torch._dynamo.mark_dynamic`), its parameter and its own local variables."""

SETUP = '''from compile_course import start; start()

import torch
from torch import nn
from compile_course import CompileWatch, call_without_recompile
from compile_course.testing import Namespace, code, passed, spy

# The test cells ask `student` about your answers and `reference` about the course's own functions.
# Here both are this notebook; at grading, the grader (your code runs in a process of its own).
student = reference = Namespace(globals())


def new_compilations(fn, sequence, *args):
    """Runs `sequence(call, *args)`, where `call` is a fresh torch.compile(fn) that counts (a CompileWatch).
    Returns {"new": the new compilations each call caused, in order, "log": torch's guard failures}."""
    watch = CompileWatch(fn, backend="eager")
    sequence(watch, *args)
    return {"new": [new for _, new in watch.calls], "log": watch.log.lines()}'''

TEST_A = '''predicted = student.answer("PREDICTED_A")
assert isinstance(predicted, (list, tuple)) and all(type(p) is int and p >= 0 for p in predicted), (
    "PREDICTED_A must be a list of whole numbers (new compilations per call: 0, 1, ...), written as a literal")
assert len(predicted) == 8, f"sequence A makes 8 calls, so PREDICTED_A needs 8 predictions; it has {len(predicted)}"
passed("PREDICTED_A is a list of 8 counts; a hidden test compares it with torch's own count")'''


def hidden(name: str, what: str, target: str, sequence: str) -> str:
    return f'''predicted = student.answer("{name}")
assert isinstance(predicted, (list, tuple)) and all(type(p) is int for p in predicted), (
    "{name} must be a list of integers, one per call, written as a literal")
counted = reference.call("new_compilations", code("{target}"), code("{sequence}"))
if not counted.ok:
    raise RuntimeError(f"torch's count of {what} failed: {{counted.error}}")
actual = counted.value["new"]
assert len(predicted) == len(actual), f"{what}: {{len(actual)}} calls, but {name} has {{len(predicted)}} predictions"
wrong = [f"  call {{i}}: predicted {{p}}, torch counted {{a}}"
         for i, (p, a) in enumerate(zip(predicted, actual), 1) if p != a]
assert not wrong, f"{what}: {{len(wrong)}} of {{len(actual)}} predictions differ:\\n" + "\\n".join(wrong)
passed(f"your {{len(actual)}} predictions for {what} match torch's count")'''


WARM_UP_TEST = '''\
SIZES = (2, 3, 5, 17, 33, 63, 64)   # batch sizes of float32 [n, 8] inputs; the service's domain is 2..64


def warm_up_then_serve(call, recorded, sizes):
    """Makes the recorded warm-up calls again (same dtypes, shapes, requires_grad, dynamic marks and
    grad mode, new values), then one call a batch size."""
    from compile_course.primitives import make_spied_args

    for i, record in enumerate(recorded):
        args, grad_enabled = make_spied_args(record, seed=i)
        with torch.set_grad_enabled(grad_enabled):
            call(*args)
    for n in sizes:
        call(torch.randn(n, 8))


# warm_up gets a stand-in for compiled_h that records each call (then runs h); the calls are then made
# again, on a fresh torch.compile(h), by the course's own code (at grading: a process without yours).
result = student.call("warm_up", spy("h"))
assert result.ok, f"warm_up raised {result.error}"
calls = result.spied or []
assert calls, "warm_up did not call compiled_h: nothing was compiled"
assert len(calls) <= 100, f"warm_up called compiled_h {len(calls)} times; a warm-up needs a few calls"
counted = reference.call("new_compilations", code("h"), code("warm_up_then_serve"), calls, list(SIZES))
assert counted.ok, f"your warm-up's calls, made on a compiled h, raise {counted.error}"
new, log = counted.value["new"], counted.value["log"]
frames = sum(new[:len(calls)])
assert frames <= 2, f"warm_up compiled {frames} times; at most 2 are allowed (think about dynamic shapes)"
late = [n for n, k in zip(SIZES, new[len(calls):]) if k]
assert not late, (f"after your warm-up, batch size {late[0]} would recompile (set_stance(\\"fail_on_recompile\\") "
                  "would raise there). torch's recompiles log:\\n" + "\\n".join(f"  {line[:200]}" for line in log[-6:]))
passed(f"after warm_up ({frames} compilation(s)), batch sizes {list(SIZES)} compile nothing new")'''

C_INTRO_OLD = """Write `warm_up(compiled_h)` so that, after it runs, every such call reuses a cached graph:
the test calls `compiled_h` under `torch.compiler.set_stance("fail_on_recompile")`, which raises
instead of recompiling. Your warm-up may compile at most twice."""

C_INTRO_NEW = """Write `warm_up(compiled_h)` so that, after it runs, every such call reuses a cached graph
(under `torch.compiler.set_stance("fail_on_recompile")`, which raises instead of recompiling, they
would all run). Your warm-up may compile at most twice. The test hands `warm_up` a stand-in for
`compiled_h` that records each call (dtype, shape, `requires_grad` and `mark_dynamic` marks of the
tensor, and the grad mode), then makes the same calls on a fresh `torch.compile(h)` followed by one
call per batch size, and counts the new compilations of each."""

replace("ex03-intro", POINTS_OLD, POINTS_NEW)
cells["ex03-setup"].source = SETUP
for cid in ("ex03-setup", "ex03-sequence-a", "ex03-sequence-b"):
    cells[cid].metadata["course"]["setup"] = True

test_a = cells["ex03-test-a"]
test_a.source = TEST_A
test_a.metadata["course"]["points"] = 1
hidden_a = nbformat.v4.new_code_cell(hidden("PREDICTED_A", "sequence A", "h", "sequence_a"))
hidden_a.id = "ex03-hidden-a"
hidden_a.metadata["course"] = {"id": "ex03-hidden-a", "kind": "hidden-test", "points": 2}
nb.cells.insert(nb.cells.index(test_a) + 1, hidden_a)
cells["ex03-hidden-b"].source = hidden("PREDICTED_B", "sequence B", "NET", "sequence_b")

replace("ex03-c-intro", C_INTRO_OLD, C_INTRO_NEW)
cells["ex03-warm-up"].metadata["course"]["allow"] = ["torch._dynamo.mark_dynamic"]
cells["ex03-test-warm-up"].source = WARM_UP_TEST

for c in nb.cells:
    if c.cell_type == "code":
        c.outputs, c.execution_count = [], None
nbformat.write(nb, P)
