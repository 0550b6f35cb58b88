"""The test-cell helpers against real PyTorch: they pass what is right and say what is wrong."""

from __future__ import annotations

import pytest
import torch

from compile_course import CompileWatch
from compile_course.checks import (break_category, expect_counts, expect_diagnosis, expect_single_graph,
                                   live_breaks, recompile_categories)


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def where(x):
    return torch.where(x.sum() > 0, x * 2, -x)


def test_single_graph_passes_a_where_and_names_the_break_of_a_branch(capsys):
    expect_single_graph(where, torch.ones(3))
    with pytest.raises(AssertionError, match=r"1 graph, 0 breaks[\s\S]*generic_jump"):
        expect_single_graph(branchy, torch.ones(3))


def test_live_breaks_classify_pytorch_reasons():
    live = live_breaks({"branchy": branchy, "where": where, "item": lambda x: x * x.sum().item()}, torch.ones(3))
    assert live == {"branchy": "data-dependent branch", "where": None, "item": "item"}
    assert break_category("something new").startswith("unrecognised")


def test_diagnosis_mismatch_says_which_entry_and_what_pytorch_reports():
    expect_diagnosis({"a": None, "b": "dtype"}, {"a": set(), "b": {"dtype"}}, "recompiles")
    with pytest.raises(AssertionError, match=r"a: you said 'shape'; PyTorch reports nothing"):
        expect_diagnosis({"a": "shape", "b": "dtype"}, {"a": set(), "b": {"dtype"}}, "recompiles")
    with pytest.raises(AssertionError, match="not one of the reason categories"):
        expect_diagnosis({"a": "because", "b": "dtype"}, {"a": {"shape"}, "b": {"dtype"}}, "recompiles")
    with pytest.raises(AssertionError, match="no entry for"):
        expect_diagnosis({}, {"a": None}, "breaks")


def test_counts_compare_with_a_live_watch_and_show_the_log():
    watch = CompileWatch(lambda x: x + 1, backend="eager")
    watch(torch.ones(2)); watch(torch.ones(2, dtype=torch.float64))
    assert recompile_categories(watch.log.lines()) == {"dtype"}
    expect_counts([1, 1], watch, "seq")
    with pytest.raises(AssertionError, match=r"call 2 \(float64\[2\]\): predicted 0, CompileWatch counted 1[\s\S]*dtype mismatch"):
        expect_counts([1, 0], watch, "seq")
    with pytest.raises(AssertionError, match="one count per call"):
        expect_counts([1], watch, "seq")
