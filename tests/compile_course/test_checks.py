"""The self-check helpers against real PyTorch: they pass what is right, say what is wrong, know no answer."""

from __future__ import annotations

import pytest
import torch

import compile_course.checks as checks
from compile_course import Case
from compile_course.checks import expect_answer_format, expect_count_list, expect_equivalent, expect_single_graph


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def where(x):
    return torch.where(x.sum() > 0, x * 2, -x)


def printing(x):
    print("first statement")
    return x * 2


def test_single_graph_passes_a_where_and_names_the_break_of_a_branch():
    expect_single_graph(where, torch.ones(3))
    with pytest.raises(AssertionError, match=r"fullgraph=True\) raised Unsupported \[GB0170\]"):
        expect_single_graph(branchy, torch.ones(3))


def test_single_graph_asks_fullgraph_first_so_a_break_before_the_first_op_is_caught(capsys):
    # explain sees 1 graph, 0 breaks here; fullgraph=True is the authority and raises GB0059.
    with pytest.raises(AssertionError, match=r"GB0059"):
        expect_single_graph(printing, torch.ones(3))


def test_equivalent_rejects_a_lost_sign_of_zero():
    def reference(x):
        return x

    def plus_zero(x):
        return x + 0.0

    expect_equivalent(reference, reference, [Case("signed zeros", (torch.tensor([-0.0, 0.0]),))], "zeros")
    with pytest.raises(AssertionError, match="sign of zero differs"):
        expect_equivalent(reference, plus_zero, [Case("signed zeros", (torch.tensor([-0.0, 0.0]),))], "zeros")


def test_equivalent_accepts_a_gradient_zero_of_the_other_sign():
    # The course's rule: an output's sign of zero counts, a gradient's does not.
    case = Case("signed zeros", (torch.tensor([-0.0, 0.0]),), grad=True)
    # (x * x).abs() and (x * x.abs()).abs(): the same values; at -0.0 their zero gradients differ in sign.
    expect_equivalent(lambda x: (x * x).abs(), lambda x: (x * x.abs()).abs(), [case], "zeros")
    # x * x and x * x.abs(): at -0.0 the outputs are 0.0 and -0.0.
    with pytest.raises(AssertionError, match="sign of zero differs"):
        expect_equivalent(lambda x: x * x, lambda x: x * x.abs(), [case], "zeros")


def test_compiled_per_call_compiles_afresh_so_the_recompile_limit_is_never_reached():
    cases = [Case(str(dtype), (torch.ones(3, dtype=dtype),)) for dtype in (torch.float32, torch.float64)]
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=1):  # a dtype change is one recompile
        one_wrapper = torch.compile(where, backend="eager", fullgraph=True)
        with pytest.raises(AssertionError, match="FailOnRecompileLimitHit"):
            expect_equivalent(where, one_wrapper, cases, "one compiled function")
        expect_equivalent(where, checks.compiled_per_call(where, backend="eager", fullgraph=True), cases, "fresh")
    torch._dynamo.reset()


def test_answer_format_checks_form_only():
    names, cats = ["a", "b"], ["shape", "dtype"]
    expect_answer_format({"a": None, "b": "dtype"}, names, cats, "ANSWER")
    expect_answer_format({"a": "shape", "b": "shape"}, names, cats, "ANSWER")  # wrong or right: not known here
    with pytest.raises(AssertionError, match="not defined"):
        expect_answer_format(None, names, cats, "ANSWER")
    with pytest.raises(AssertionError, match=r"no entry for \['b'\]"):
        expect_answer_format({"a": None}, names, cats, "ANSWER")
    with pytest.raises(AssertionError, match="not None or one of"):
        expect_answer_format({"a": "because", "b": None}, names, cats, "ANSWER")


def test_count_list_checks_form_only():
    expect_count_list([1, 0, 2], 3, "P")
    with pytest.raises(AssertionError, match="3 predictions"):
        expect_count_list([1, 0], 3, "P")
    with pytest.raises(AssertionError, match="whole number"):
        expect_count_list([1, 0.5, -1], 3, "P")


def test_no_oracle_of_a_graded_answer_is_importable():
    for name in ("live_breaks", "live_recompiles", "expect_diagnosis", "expect_counts", "break_category",
                 "recompile_categories", "CATEGORIES"):
        assert not hasattr(checks, name), name
