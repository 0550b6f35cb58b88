"""compare(): eager versus a torch.compile'd candidate, with planted faults.

Every candidate here really goes through torch.compile (backend="eager", so
capture is cheap); the faults are planted in the candidate's Python, the way
a wrong hand-rewrite for compilation would plant them.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from compile_course.comparison import Case, compare, compare_tensors, tolerance, tolerance_table


def compiled(fn):
    return torch.compile(fn, backend="eager")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def gelu_like(x):
    if x.dtype == torch.float64:
        return x * torch.sigmoid(1.702 * x)
    return x * torch.sigmoid(1.702 * x.double()).to(x.dtype)


def branchy(x):
    # Two branches on a Python-visible condition (the tensor's dimension).
    if x.dim() == 1:
        return x.abs() + 1
    return x.sum(-1) * 2


CASES = [
    Case("1-d float64", (torch.linspace(-2, 2, 7, dtype=torch.float64),)),
    Case("2-d float64", (torch.arange(6, dtype=torch.float64).reshape(2, 3),)),
]


def test_faithful_compiled_function_agrees_on_every_case():
    report = compare(branchy, compiled(branchy),
                     CASES + [Case("grad", (torch.randn(5, dtype=torch.float64),), grad=True)])
    assert report.ok, str(report)
    assert [r.output.text for r in report.results] == ["exact", "exact", "exact"]
    assert report.results[2].grad.text == "exact"
    assert str(report).endswith("3/3 cases agree")
    report.assert_ok()  # does not raise


def test_dropped_branch_is_caught():
    def one_branch(x):  # the 2-d branch was dropped in the "rewrite"
        return x.abs() + 1

    report = compare(branchy, compiled(one_branch), CASES)
    assert [r.ok for r in report.results] == [True, False]
    assert report.results[1].output.text == "shape [2, 3] != [2]"
    assert "1/2 cases agree  <-- the candidate is NOT equivalent" in str(report)


def test_dropped_value_branch_is_caught():
    def ref(x):
        return torch.where(x > 0, x * 2, -x)

    def cand(x):
        return x * 2

    report = compare(ref, compiled(cand), [Case("mixed signs", (torch.tensor([-1.0, 0.5, 3.0]),))])
    assert not report.ok
    assert report.results[0].output.text == "values differ, max diff 3.0e+00"


def test_dtype_change_is_caught():
    report = compare(gelu_like, compiled(lambda x: x.float() * torch.sigmoid(1.702 * x.float())),
                     [Case("float64 in", (torch.randn(4, dtype=torch.float64),))])
    assert report.results[0].output.text == "dtype float32 != float64"
    assert not report.ok


def test_wrong_gradient_is_caught_while_forward_is_exact():
    def ref(x):
        return x * x

    def cand(x):  # same forward values, but the gradient only flows through one factor
        return x * x.detach()

    report = compare(ref, compiled(cand),
                     [Case("grad", (torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64),), grad=True)])
    result = report.results[0]
    assert result.output.text == "exact"
    assert not result.grad.ok and result.grad.text.startswith("values differ, max diff")
    assert not report.ok


def test_missing_gradient_is_caught():
    report = compare(lambda x: x * 3, compiled(lambda x: (x * 3).detach()),
                     [Case("grad", (torch.ones(3, dtype=torch.float64),), grad=True)])
    assert not report.results[0].ok


def test_sign_of_zero_is_reported_and_matters_where_it_propagates():
    def cand_abs(x):  # where(x < 0, -x, x) keeps -0.0; abs gives +0.0
        return torch.where(x < 0, -x, x)

    x = torch.tensor([-0.0, 1.0, -2.0])
    report = compare(torch.abs, compiled(cand_abs), [Case("negative zero", (x,))])
    assert not report.ok
    assert report.results[0].output.text == "sign of zero differs"
    # A value within the tolerance elsewhere does not hide the flipped zero.
    report = compare(torch.abs, compiled(lambda x: cand_abs(x) * (1 + 1e-7)), [Case("negative zero", (x,))])
    assert report.results[0].output.text == "sign of zero differs"
    # A real difference in value is the reason given, not a zero's sign next to it.
    report = compare(torch.abs, compiled(lambda x: cand_abs(x) * 2), [Case("negative zero", (x,))])
    assert report.results[0].output.text == "values differ, max diff 2.0e+00"
    # Downstream of a division the flipped zero becomes -inf vs +inf.
    report = compare(lambda x: 1 / torch.abs(x), compiled(lambda x: 1 / cand_abs(x)), [Case("negative zero", (x,))])
    assert not report.ok
    assert report.results[0].output.text == "infinities differ"


def test_sign_of_a_zero_gradient_is_reported_but_passes():
    # Autograd does not fix a zero gradient's sign: at -0.0, d(x * x)/dx is 0.0 and d(x * |x|)/dx is -0.0.
    x = torch.tensor([-0.0, 0.0])
    report = compare(lambda x: (x * x).abs(), compiled(lambda x: (x * x.abs()).abs()),
                     [Case("zero gradient", (x,), grad=True)])
    assert report.ok
    assert (report.results[0].output.text, report.results[0].grad.text) == ("exact", "close (sign of zero differs)")


def test_sign_of_zero_in_a_python_float_output():
    report = compare(lambda x: (x * 1, 0.0), compiled(lambda x: (x * 1, -0.0)), [Case("t", (torch.ones(2),))])
    assert not report.ok and report.results[0].output.text == "sign of zero differs"


def test_nan_boundary_mistake_is_caught():
    report = compare(torch.relu, compiled(lambda x: torch.where(x > 0, x, 0.0)),
                     [Case("nan", (torch.tensor([float("nan"), 1.0, -2.0]),))])
    assert not report.ok
    assert report.results[0].output.text == "NaN positions differ"
    # ...while a faithful candidate keeps NaN where eager has it.
    report = compare(torch.relu, compiled(torch.relu), [Case("nan", (torch.tensor([float("nan"), 1.0, -2.0]),))])
    assert report.ok and report.results[0].output.text == "exact"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x))


class AlwaysDropout(Block):
    def forward(self, x):  # planted: ignores self.training
        return F.dropout(self.lin(x), 0.5, training=True)


def test_module_modes():
    torch.manual_seed(0)
    ref = Block()
    x = torch.randn(3, 4)
    cases = [Case("train", (x,), mode="train", grad=True), Case("eval", (x,), mode="eval", grad=True)]
    faithful = compare(ref, compiled(ref), cases)
    assert faithful.ok, str(faithful)

    bad = AlwaysDropout()
    bad.load_state_dict(ref.state_dict())
    report = compare(ref, compiled(bad), cases)
    train, evaluation = report.results
    assert train.ok  # the same seed draws the same dropout mask
    assert not evaluation.ok and evaluation.output.text.startswith("values differ")


def test_mode_needs_a_module():
    with pytest.raises(TypeError, match="needs an nn.Module"):
        compare(torch.relu, compiled(torch.relu), [Case("eval", (torch.ones(2),), mode="eval")])


def checked(x):
    if x.dim() != 2:
        raise ValueError("expected a matrix")
    return x.t()


def test_error_behaviour_mismatch_is_caught():
    report = compare(checked, compiled(lambda x: x.t()), [Case("vector", (torch.ones(3),))])
    assert report.results[0].output.text == "returns a value, eager raises ValueError"
    report = compare(lambda x: x.t(), compiled(checked), [Case("vector", (torch.ones(3),))])
    assert report.results[0].output.text == "raises ValueError, eager returns a value"
    assert not report.ok


def test_same_error_is_agreement():
    def mm(a, b):
        return a @ b

    report = compare(mm, compiled(mm), [Case("bad shapes", (torch.ones(2, 3), torch.ones(2, 3)))])
    assert report.ok
    assert report.results[0].output.text == "both raise RuntimeError"
    report = compare(checked, compiled(checked), [Case("vector", (torch.ones(3),))])
    assert report.results[0].output.text == "both raise ValueError"


def test_shape_mismatch_is_caught():
    report = compare(lambda x: x.sum(0), compiled(lambda x: x.sum(0, keepdim=True)), [Case("2x3", (torch.ones(2, 3),))])
    assert report.results[0].output.text == "shape [1, 3] != [3]"


@pytest.mark.parametrize("dtype, nudge, verdict", [
    (torch.float32, 2e-6, "close"),
    (torch.float32, 1e-3, "values differ"),
    (torch.float64, 2e-6, "values differ"),
    (torch.float64, 2e-8, "close"),
])
def test_float_tolerance_depends_on_dtype(dtype, nudge, verdict):
    x = torch.linspace(1, 2, 5, dtype=dtype)
    report = compare(lambda x: x * 3, compiled(lambda x: x * 3 * (1 + nudge)), [Case(str(dtype), (x,))])
    assert report.results[0].output.text.startswith(verdict), str(report)
    assert report.ok == (verdict == "close")


def test_integers_are_exact():
    x = torch.arange(6)
    assert compare(lambda x: x * 2, compiled(lambda x: x + x), [Case("int", (x,))]).results[0].output.text == "exact"
    report = compare(lambda x: x * 2, compiled(lambda x: x * 2 + (x == 5)), [Case("int", (x,))])
    assert report.results[0].output.text == "values differ (1 elements)"
    assert tolerance(torch.int64)[:2] == (0.0, 0.0)


def test_compare_tensors_agrees_with_torch_testing():
    # The float tolerances are torch.testing.assert_close's own defaults.
    a = torch.linspace(1, 2, 9)
    for b in (a * (1 + 1e-6), a * (1 + 1e-4)):
        try:
            torch.testing.assert_close(b, a)
            expected_ok = True
        except AssertionError:
            expected_ok = False
        assert compare_tensors(a, b).ok == expected_ok


def test_non_tensor_outputs_and_structure():
    report = compare(lambda x: (x.shape[0], x * 1), compiled(lambda x: (x.shape[0] + 1, x * 1)),
                     [Case("t", (torch.ones(2),))])
    assert report.results[0].output.text == "3 != 2"
    report = compare(lambda x: (x, x), compiled(lambda x: [x, x]), [Case("t", (torch.ones(2),))])
    assert report.results[0].output.text == "output structure differs"


def _report():
    torch._dynamo.reset()
    cases = CASES + [Case("mixed", (torch.tensor([-1.0, 0.5], dtype=torch.float64),), grad=True)]
    return compare(branchy, compiled(lambda x: x.abs() + 1), cases)


def test_report_is_stable():
    first = _report()
    assert str(first) == str(first)
    assert str(first) == str(_report())  # two fresh compiles print the same report
    lines = str(first).splitlines()
    assert lines[0].split(" | ")[0].strip() == "case"
    assert set(lines[1]) <= {"-", "+"}
    assert lines[-1] == "2/3 cases agree  <-- the candidate is NOT equivalent"
    assert [line.rsplit(" | ", 1)[-1] for line in lines[2:5]] == ["ok", "FAIL", "ok"]


def test_assert_ok_raises_with_the_report():
    report = _report()
    with pytest.raises(AssertionError) as info:
        report.assert_ok()
    assert str(report) in str(info.value)
    assert len(report.failures) == 1


def test_tolerance_table_names_every_dtype():
    table = tolerance_table()
    assert [line.split()[0] for line in table.splitlines()] == ["float64", "float32", "float16", "bfloat16", "int64"]
    assert "any difference is a bug" in table.splitlines()[-1]


def test_package_level_compare_is_the_function_not_a_module():
    """`from compile_course import compare` must give the callable the notebooks use."""
    import compile_course
    from compile_course import compare as from_package

    assert callable(from_package) and from_package is compare
    assert compile_course.compare is compare
