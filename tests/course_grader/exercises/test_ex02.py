"""ex02 graded from its notebook's test cells: literal answers, their form public, torch's key hidden.

The public tests (1 point each) check only the form of BREAKS and RECOMPILES, so the self-check
cannot tell a right entry from a wrong one; the hidden tests (2 points each) compare every entry
with torch's graph_breaks log and CompileWatch/recompiles log on the course's own functions,
asked of ``reference``.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from compile_course.testing import Namespace
from course_grader.verdict import testcells

RIGHT_BREAKS = ('BREAKS = {"scale_and_report": "print", "scale_by_total": "item", '
                '"flip_if_negative": "data-dependent branch", "clipped": None, "logged_scale": "logging"}')
OLD_KEY = ('BREAKS = {"scale_and_report": None, "scale_by_total": "item", '
           '"flip_if_negative": "data-dependent branch", "clipped": None, "logged_scale": None}')
RIGHT_RECOMPILES = ('RECOMPILES = {"seq_a": None, "seq_b": "dtype", "seq_c": "requires_grad", '
                    '"seq_d": "mode", "seq_e": "shape", "seq_f": None}')
BREAK_TESTS = ("ex02-test-breaks", "ex02-hidden-breaks")
RECOMPILE_TESTS = ("ex02-test-recompiles", "ex02-hidden-recompiles")


def test_points_split_form_public_comparison_hidden(exercises):
    points = {c.course_id: (c.kind.value, c.points) for c in exercises["ex02"].tests}
    assert points == {"ex02-test-breaks": ("test", 1), "ex02-hidden-breaks": ("hidden-test", 2),
                      "ex02-test-recompiles": ("test", 1), "ex02-hidden-recompiles": ("hidden-test", 2)}


def test_model_answer_passes_every_test(grade_with, model_cells):
    verdicts = grade_with("ex02", model_cells("ex02"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}
    assert "graph_breaks log for all 5" in verdicts["ex02-hidden-breaks"].message


def test_the_old_key_that_called_print_traced_fails_only_the_hidden_breaks(grade_with):
    verdicts = grade_with("ex02", {"ex02-breaks": OLD_KEY, "ex02-recompiles": RIGHT_RECOMPILES})
    assert verdicts["ex02-test-breaks"].passed          # well formed: the self-check cannot tell
    hidden = verdicts["ex02-hidden-breaks"]
    assert not hidden.passed
    assert "scale_and_report" in hidden.message and "logged_scale" in hidden.message
    assert "GB0059" in hidden.message and "flip_if_negative" not in hidden.message  # torch's own id, only the wrong
    assert all(verdicts[t].passed for t in RECOMPILE_TESTS)


def test_a_wrong_recompile_entry_fails_only_the_hidden_recompiles(grade_with):
    swapped = RIGHT_RECOMPILES.replace('"seq_b": "dtype"', '"seq_b": "shape"')
    verdicts = grade_with("ex02", {"ex02-breaks": RIGHT_BREAKS, "ex02-recompiles": swapped})
    assert verdicts["ex02-test-recompiles"].passed
    hidden = verdicts["ex02-hidden-recompiles"]
    assert not hidden.passed and "seq_b" in hidden.message and "dtype mismatch" in hidden.message
    assert all(verdicts[t].passed for t in BREAK_TESTS)


@pytest.mark.parametrize("source, said", [
    ("BREAKS = live_breaks(FUNCTIONS, EXAMPLE)", "literal"),            # computed by code: never run
    ("BREAKS = {name: None for name in FUNCTIONS}", "literal"),
    ("BREAKS = __import__('os')._exit(3)", "literal"),                  # run, it would end this process
    ('raise NotImplementedError("ex02-breaks: replace this line with your answer")', "not defined"),
    ("BREAKS = " + "[" * 100 + "]" * 100, "deeper"),
    ("BREAKS = {" + ", ".join(f"'k{i}': None" for i in range(5000)) + "}", "far larger"),
    ("BREAKS = [('scale_and_report', 'print')]", "dict"),
    ("BREAKS = {1: 'print', 'scale_and_report': 'print'}", "name in quotes"),
    ('BREAKS = {"scale_and_report": "print"}', "no entry for"),
    (RIGHT_BREAKS.replace('"clipped": None', '"clipped": ["print"]'), "clipped"),
    (RIGHT_BREAKS.replace('"clipped": None', '"clipped": "none"'), "None or one of"),
    (RIGHT_BREAKS.replace("}", ', "extra": None}'), "not in the exercise"),
])
def test_unusable_answers_fail_both_breaks_tests_with_a_message(grade_with, source, said):
    verdicts = grade_with("ex02", {"ex02-breaks": source, "ex02-recompiles": RIGHT_RECOMPILES})
    for test_id in BREAK_TESTS:
        assert not verdicts[test_id].passed
        assert said in verdicts[test_id].message, verdicts[test_id].message
        assert "could not check" not in verdicts[test_id].message   # the test's own message, not a crash
        assert len(verdicts[test_id].message) < 700
    assert all(verdicts[t].passed for t in RECOMPILE_TESTS)


def test_unanswered_fails_every_test_with_a_message(grade_with):
    stub = 'raise NotImplementedError("{}: replace this line with your answer")'
    verdicts = grade_with("ex02", {"ex02-breaks": stub.format("ex02-breaks"),
                                   "ex02-recompiles": stub.format("ex02-recompiles")})
    assert not any(v.passed for v in verdicts.values())
    assert "RECOMPILES = ..." in verdicts["ex02-hidden-recompiles"].message


# ------------------------------------------------------------------ every category can match

def _setup_namespace(exercise) -> dict:
    namespace: dict = {"__name__": "__course_test__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in exercise.setup_sources:
            exec(compile(source, "<setup>", "exec"), namespace)  # noqa: S102 - the course's setup cells
    return namespace


def _run_cell(exercise, test_id: str, namespace: dict, answers: dict):
    source = exercise.cell(test_id).source
    return testcells.run_test(source, test_id, namespace, Namespace(answers), Namespace(namespace))


def test_every_recompile_category_can_match_torchs_own_guard_text(exercises):
    """The hidden cell's table, fed torch's real guard failures (one sequence per category, grad mode too)."""
    import torch

    ex = exercises["ex02"]
    namespace = _setup_namespace(ex)
    double, net = namespace["double"], namespace["NET"]

    def grad_mode(call):
        call(torch.randn(4))
        with torch.no_grad():
            call(torch.randn(4))

    def mode(call):
        net.train()
        call(torch.randn(2, 4))
        net.eval()
        call(torch.randn(2, 4))

    def shape(call):
        call(torch.randn(4))
        call(torch.randn(7))

    def dtype(call):
        call(torch.randn(4))
        call(torch.randn(4, dtype=torch.float64))

    def requires_grad(call):
        call(torch.randn(4))
        call(torch.randn(4, requires_grad=True))

    def none(call):
        call(torch.randn(4))
        call(torch.randn(4))

    sequences = {"shape": shape, "dtype": dtype, "requires_grad": requires_grad, "mode": mode,
                 "grad mode": grad_mode, "none": none}
    namespace["SEQUENCES"].clear()
    namespace["SEQUENCES"].update(sequences)
    namespace["TARGETS"].clear()
    namespace["TARGETS"].update({name: net if name == "mode" else double for name in sequences})
    right = {name: None if name == "none" else name for name in sequences}
    assert set(right.values()) - {None} == set(namespace["RECOMPILE_CATEGORIES"])
    verdict = _run_cell(ex, "ex02-hidden-recompiles", namespace, {"RECOMPILES": right})
    assert verdict.passed, verdict.message
    wrong = _run_cell(ex, "ex02-hidden-recompiles", namespace, {"RECOMPILES": {**right, "grad mode": "mode"}})
    assert not wrong.passed and "grad_mode" in wrong.message


def test_every_break_category_can_match_and_gb0059_is_print_only_for_print(exercises):
    ex = exercises["ex02"]
    namespace = _setup_namespace(ex)
    assert set(v for v in namespace["BREAK_CATEGORIES"]) == {"print", "logging", "item", "data-dependent branch"}
    exec("def calls_dir(x):\n    dir(x)\n    return x * 2", namespace)  # noqa: S102 - GB0059, not print
    namespace["FUNCTIONS"]["calls_dir"] = namespace["calls_dir"]
    answers = {"scale_and_report": "print", "scale_by_total": "item", "flip_if_negative": "data-dependent branch",
               "clipped": None, "logged_scale": "logging", "calls_dir": "print"}
    verdict = _run_cell(ex, "ex02-hidden-breaks", namespace, {"BREAKS": answers})
    assert not verdict.passed
    assert "1 of 6" in verdict.message and "calls_dir" in verdict.message and "unrecognised (GB0059)" in verdict.message
