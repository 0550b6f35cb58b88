"""One-off migration of ex04's solution notebook to grader v3 (kept for the record of the change).

Run on a clean notebook: ``git checkout solutions/ex04_comparison_fixture.ipynb`` first.

The candidates and the right verdicts are v2's (``course_grader.exercises.ex04.TESTS``, built by
``course_grader.harness.ex04``), now written in the test cells: each test asks
``student.call_each("check_equivalent", ...)`` for the fixture's verdicts on its candidates, in a
random order, and compares them with the verdicts it holds. Every candidate is wrapped alike (a
plain function ``candidate(x)``, or one module class around a ``Block``), as v2's harness did.
"""
import nbformat

P = "solutions/ex04_comparison_fixture.ipynb"
nb = nbformat.read(P, as_version=4)
cells = {c.get("id"): c for c in nb.cells}

GRADED = '''**How it is graded:** the test cells below are the grader's tests. At grading, the grader runs
them itself and sends the source of `check_equivalent` to a separate process, where it judges the
candidates a test names: faithful and faulty, compiled with `torch.compile` and not, each wrapped
so that all look alike (a plain function `candidate(x)`, or one module class around a `Block`), in a
random order. Every graded test mixes both kinds, so only comparing behaviour earns points. The
fixture may use `torch`, `nn`, `Case`, `compare`, `copy`, `hasattr`, its parameters and its own local
variables (and helpers or constants defined in the same cell); it may not assign to attributes or
read attributes whose names start with `_`. It must return `True` or `False` (a `bool`).'''

SETUP = '''from compile_course import start; start()

import copy  # noqa: F401  (for your fixture: check_equivalent may use it)
import torch
from torch import nn
from compile_course import Case, compare
from compile_course.testing import Namespace, code, passed

# The test cells ask `student` about your fixture. Here it is this notebook; at grading, the grader.
student = Namespace(globals())'''

TESTS_INTRO = '''## Self-checks

Each planted fault below is a plausible rewrite someone could make to avoid a graph break or
"simplify" a function. Your fixture must flag every one and pass the faithful transformations.

Each test asks for your fixture's verdict on a list of (reference, candidate) pairs, with
`student.call_each("check_equivalent", ...)`, in a random order. A candidate reaches your fixture
wrapped, so that it looks like every other: a plain function `candidate(x)`, or one module class
around a `Block`. Only its behaviour tells them apart.'''

# Every function candidate is a plain `candidate(x)`; `compiled` compiles afresh (Dynamo's caches emptied).
FUNCTIONS = '''def plain(fn):                  # every function candidate looks alike: a plain `candidate(x)`
    def candidate(x):
        return fn(x)
    return candidate

def compiled(fn):
    torch._dynamo.reset()
    return plain(torch.compile(fn, backend="eager"))'''

MODULES = '''class AsModule(nn.Module):      # every module candidate: this class around a Block, whatever it runs
    def __init__(self, inner, forward):
        super().__init__()
        self.inner = inner
        self._forward = [forward]   # in a list, so it is not a submodule (and a fixture cannot read it)

    def forward(self, x):
        return self._forward[0](x)'''

# The fixture's verdicts, in a shuffled (fixed) order, against the right ones (which stay here).
JUDGE = '''random.Random(len(cases)).shuffle(cases)   # a mixed order, the same at every grading
results = student.call_each("check_equivalent", *[(code(ref), code(cand)) for _, ref, cand, _ in cases])
wrong = []
for (what, _, _, right), r in zip(cases, results):
    if not r.ok:
        wrong.append(f"  {what}: your fixture raised {r.error}")
    elif type(r.value) is not bool:
        wrong.append(f"  {what}: your fixture returned {repr(r.value)[:60]}, not a bool (True or False)")
    elif r.value is not right:
        wrong.append(f"  {what}: your fixture said {r.value}, but the candidate is "
                     f"{'faithful' if right else 'NOT equivalent'}")
assert not wrong, f"{len(wrong)} of {len(cases)} candidates judged wrongly:\\n" + "\\n".join(sorted(wrong))'''


def test_cell(*parts: str) -> str:
    return "import random\n\n" + "\n\n".join(parts)


FAITHFUL = test_cell(FUNCTIONS, MODULES, '''def block():
    inner = make_block()
    return AsModule(inner, inner)

def compiled_block():
    torch._dynamo.reset()
    inner = make_block()
    return AsModule(inner, torch.compile(inner, backend="eager"))

def gate_rewritten(x):          # the same arithmetic, written differently
    return torch.where(x > 0, x.square(), x * -0.5)

cases = [  # (what the candidate is, reference, candidate, the right verdict)
    ("torch.compile(gate)", "gate", "compiled(gate)", True),
    ("gate rewritten (x.square(), x * -0.5)", "gate", "plain(gate_rewritten)", True),
    ("torch.compile(make_block())", "make_block()", "compiled_block()", True),
    ("an identical, uncompiled Block", "make_block()", "block()", True),
    ("torch.relu in place of gate", "gate", "plain(torch.relu)", False),
]''', JUDGE, 'passed("faithful transformations pass (compiled and not); relu in place of gate does not")')

VALUES = test_cell(
    FUNCTIONS, '''def dropped_branch(x):          # the negative branch was removed "to avoid a graph break"
    return x * x

def boundary_at_zero(x):        # > became >=: at 0.0 it returns 0.0, not -0.0, and its gradient is 0, not -0.5
    return torch.where(x >= 0, x * x, -0.5 * x)

def nan_scrubbed(x):            # NaN inputs silently become 0
    return gate(torch.nan_to_num(x))

def gate_rewritten(x):          # the same arithmetic, written differently
    return torch.where(x > 0, x.square(), x * -0.5)

cases = [  # (what the candidate is, reference, candidate, the right verdict)
    ("dropped branch, compiled", "gate", "compiled(dropped_branch)", False),
    ("boundary mistake at 0", "gate", "plain(boundary_at_zero)", False),
    ("NaN replaced by 0, compiled", "gate", "compiled(nan_scrubbed)", False),
    ("gate rewritten, compiled", "gate", "compiled(gate_rewritten)", True),
]''', JUDGE, 'passed("flags a dropped branch, a boundary mistake at 0, and a NaN mistake; passes a faithful rewrite")')

GRAD_MODE = test_cell(FUNCTIONS, MODULES, '''def block():
    inner = make_block()
    return AsModule(inner, inner)

def forced_eval_block(compile_forward):
    torch._dynamo.reset()
    inner = make_block()

    def forward(x):             # always runs the Block in eval mode, whatever mode it was given
        inner.eval()
        return inner(x)
    return AsModule(inner, torch.compile(forward, backend="eager") if compile_forward else forward)

def detached_square(x):         # same values, but d/dx of x * x.detach() is x, not 2x
    return torch.where(x > 0, x * x.detach(), -0.5 * x)

cases = [  # (what the candidate is, reference, candidate, the right verdict)
    ("x * x.detach() (wrong gradient), compiled", "gate", "compiled(detached_square)", False),
    ("a Block forced into eval mode", "make_block()", "forced_eval_block(False)", False),
    ("a Block forced into eval mode, compiled", "make_block()", "forced_eval_block(True)", False),
    ("an identical, uncompiled Block", "make_block()", "block()", True),
]''', JUDGE, 'passed("flags wrong gradients and a train/eval mode mistake; passes an identical Block")')

HIDDEN_DTYPE = test_cell(FUNCTIONS, '''def float32_inside(x):
    return gate(x.float())

def float64_fast_path(x):
    if x.dtype == torch.float64:
        return torch.where(x > 0, x * x, 0.5 * x)
    return gate(x)

cases = [  # (what the candidate is, reference, candidate, the right verdict)
    ("computes in float32 whatever the input dtype", "gate", "plain(float32_inside)", False),
    ("a float64 branch with the wrong sign, compiled", "gate", "compiled(float64_fast_path)", False),
    ("torch.compile(gate)", "gate", "compiled(gate)", True),
]''', JUDGE, 'passed("flags faults that appear only at float64")')

HIDDEN_SHAPE = test_cell(FUNCTIONS, '''def first_block_only(x):
    return torch.cat([gate(x[:8]), -0.5 * x[8:]])

def pairwise_rows(x):
    n = x.shape[0] - x.shape[0] % 2
    return torch.cat([gate(x[:n]), x[n:]])

def gate_rewritten(x):
    return torch.where(x > 0, x.square(), x * -0.5)

cases = [  # (what the candidate is, reference, candidate, the right verdict)
    ("rows past the 8th handled as negative, compiled", "gate", "compiled(first_block_only)", False),
    ("the last row of an odd batch left as it is", "gate", "plain(pairwise_rows)", False),
    ("gate rewritten (x.square(), x * -0.5)", "gate", "plain(gate_rewritten)", True),
]''', JUDGE, 'passed("flags faults that appear only at other batch sizes")')

intro = cells["ex04-intro"]
head, sep, _ = intro.source.partition("**How it is graded:**")
assert sep, "ex04-intro: no 'How it is graded' paragraph (run on a clean notebook)"
intro.source = head + GRADED
cells["ex04-setup"].source = SETUP
cells["ex04-setup"].metadata["course"]["setup"] = True
cells["ex04-references"].metadata["course"]["setup"] = True
cells["ex04-fixture"].metadata["course"]["allow"] = ["hasattr"]
cells["ex04-tests-intro"].source = TESTS_INTRO
cells["ex04-test-faithful"].source = FAITHFUL
cells["ex04-test-values"].source = VALUES
cells["ex04-test-grad-mode"].source = GRAD_MODE
cells["ex04-hidden-dtype"].source = HIDDEN_DTYPE
cells["ex04-hidden-shape"].source = HIDDEN_SHAPE
for c in nb.cells:
    if c.cell_type == "code":
        c.outputs, c.execution_count = [], None
nbformat.write(nb, P)
