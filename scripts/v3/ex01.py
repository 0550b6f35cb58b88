"""One-off migration of ex01's solution notebook to grader v3 (kept for the record of the change)."""
import nbformat

P = "solutions/ex01_capture_boundary.ipynb"
nb = nbformat.read(P, as_version=4)
cells = {c.get("id"): c for c in nb.cells}

SETUP = '''from compile_course import start; start()

import torch
from compile_course import Case, compare, explain
from compile_course.testing import Namespace, expect_like_reference, passed

# The test cells ask `student` about your functions. Here it is this notebook; at grading, the grader.
student = Namespace(globals())'''

CAPTURE = '''for dtype in (torch.float32, torch.float64):
    x = torch.tensor([3.0, -4.0], dtype=dtype)
    run = student.compile("safe_normalize_rewrite", (x,))                  # fullgraph=False: breaks are listed
    assert run.calls[0].ok, f"{dtype}: your function raised {run.calls[0].error}"
    assert run.frames == 1 and not run.breaks, (
        f"{dtype}: {run.frames} graph(s) and {len(run.breaks)} graph break(s); the contract is 1 graph, 0 breaks. "
        "torch says:\\n" + "\\n".join(f"  {b}" for b in run.breaks))
    strict = student.compile("safe_normalize_rewrite", (x,), fullgraph=True)
    assert strict.calls[0].ok, f"{dtype}: torch.compile(..., fullgraph=True) raised {strict.calls[0].error}"
passed("1 graph, 0 graph breaks, and fullgraph=True compiles (float32 and float64)")'''

VALUES = '''g = torch.Generator().manual_seed(1)
cases = []
for dtype in (torch.float32, torch.float64):
    for shape in [(2,), (5,), (3, 4)]:
        cases.append((f"{dtype} {list(shape)} random", (torch.randn(shape, generator=g).to(dtype).requires_grad_(),)))
    cases.append((f"{dtype} zero vector (values)", (torch.zeros(4, dtype=dtype),)))
expect_like_reference(student, "safe_normalize_rewrite", safe_normalize, cases, "public cases", fullgraph=True)
passed(f"values, dtypes and gradients agree on {len(cases)} public cases, compiled and eager")'''

HIDDEN = '''nan, inf = float("nan"), float("inf")
cases = []
for dtype in (torch.float32, torch.float64):
    def t(values, grad=False):
        x = torch.tensor(values, dtype=dtype)
        return (x.requires_grad_() if grad else x,)
    cases += [
        (f"{dtype} zero vector, gradients", t([0.0, 0.0, 0.0], grad=True)),
        (f"{dtype} -0.0 entries", t([-0.0, 0.0, -0.0])),
        (f"{dtype} -0.0 entries, gradients", t([-0.0, 0.0], grad=True)),
        (f"{dtype} NaN entry", t([nan, 1.0, -2.0])),
        (f"{dtype} infinity", t([inf, 1.0])),
        (f"{dtype} tiny values, gradients", t([1e-30, 0.0, -1e-30], grad=True)),
        (f"{dtype} 0-dim", t(-2.5, grad=True)),
        (f"{dtype} 0-dim zero, gradients", t(0.0, grad=True)),
        (f"{dtype} 2-d with a zero row", t([[0.0, 0.0], [3.0, 4.0]], grad=True)),
    ]
expect_like_reference(student, "safe_normalize_rewrite", safe_normalize, cases, "boundary cases", fullgraph=True)
passed(f"boundary values and gradients agree on {len(cases)} hidden cases, compiled and eager")'''

cells["ex01-setup"].source = SETUP
cells["ex01-setup"].metadata["course"]["setup"] = True
ref = cells["ex01-reference"]
src = ref.source
definition, _, shown = src.partition("\n\nprint(")
ref.source = definition
ref.metadata["course"]["setup"] = True
explain_cell = nbformat.v4.new_code_cell("print(" + shown)
explain_cell.id = "ex01-reference-explain"
explain_cell.metadata["course"] = {"id": "ex01-reference-explain", "kind": "locked"}
nb.cells.insert(nb.cells.index(ref) + 1, explain_cell)
cells["ex01-test-capture"].source = CAPTURE
cells["ex01-test-values"].source = VALUES
cells["ex01-hidden-boundary"].source = HIDDEN
for c in nb.cells:
    if c.cell_type == "code":
        c.outputs, c.execution_count = [], None
nbformat.write(nb, P)
