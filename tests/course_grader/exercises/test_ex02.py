"""ex02: literal answers graded against torch's graph_breaks log and recompiles log."""

from __future__ import annotations

import pytest

from course_grader.exercises import ex02

RIGHT_BREAKS = ('BREAKS = {"scale_and_report": "print", "scale_by_total": "item", '
                '"flip_if_negative": "data-dependent branch", "clipped": None, "logged_scale": "logging"}')
OLD_KEY = ('BREAKS = {"scale_and_report": None, "scale_by_total": "item", '
           '"flip_if_negative": "data-dependent branch", "clipped": None, "logged_scale": None}')
RIGHT_RECOMPILES = ('RECOMPILES = {"seq_a": None, "seq_b": "dtype", "seq_c": "requires_grad", '
                    '"seq_d": "mode", "seq_e": "shape", "seq_f": None}')


def test_the_key_comes_from_torch_and_every_category_can_match(grade_with):
    verdicts = grade_with("ex02", {"ex02-breaks": RIGHT_BREAKS, "ex02-recompiles": RIGHT_RECOMPILES})
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


def test_model_answer_passes(grade_with, model_cells):
    verdicts = grade_with("ex02", model_cells("ex02"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


def test_the_old_key_that_called_print_traced_fails(grade_with):
    verdicts = grade_with("ex02", {"ex02-breaks": OLD_KEY, "ex02-recompiles": RIGHT_RECOMPILES})
    assert not verdicts["ex02-test-breaks"].passed
    assert "scale_and_report" in verdicts["ex02-test-breaks"].message
    assert verdicts["ex02-test-recompiles"].passed


@pytest.mark.parametrize("source", [
    "BREAKS = live_breaks(FUNCTIONS, EXAMPLE)",                 # computed by code: never run
    "BREAKS = {name: None for name in FUNCTIONS}",
    'raise NotImplementedError("ex02-breaks: replace this line with your answer")',
    "BREAKS = " + "[" * 100 + "]" * 100,
])
def test_answers_that_are_not_literals_fail_without_running(grade_with, source):
    verdicts = grade_with("ex02", {"ex02-breaks": source, "ex02-recompiles": RIGHT_RECOMPILES})
    assert not verdicts["ex02-test-breaks"].passed
    assert verdicts["ex02-test-recompiles"].passed


def test_break_key_reads_gb_ids():
    assert ex02.break_key([]) is None
    assert ex02.break_key([{"gb": "GB0170", "text": "Data-dependent branching"}]) == "data-dependent branch"
    assert ex02.break_key([{"gb": "GB0059", "text": "builtin operator `print`"}]) == "print"
    assert ex02.break_key([{"gb": "GB0059", "text": "builtin operator `len`"}]).startswith("unrecognised")
    assert ex02.recompile_key(2, ["- 0/0: GLOBAL_STATE changed: grad_mode"]) == "grad mode"
    assert ex02.recompile_key(1, []) is None


def test_notebook_lists_the_same_categories(exercises):
    setup = exercises["ex02"].cell("ex02-setup").source
    assert f"BREAK_CATEGORIES = {list(ex02.BREAK_CATEGORIES)!r}".replace("'", '"') in setup
    assert f"RECOMPILE_CATEGORIES = {list(ex02.RECOMPILE_CATEGORIES)!r}".replace("'", '"') in setup
