"""ex04 graded from its notebook's test cells: the fixture judges candidates it cannot recognise.

Every test mixes faithful and faulty candidates, compiled and not, wrapped alike; the right
verdicts stay in the test cells (the grader's process), and the child only sees the candidates.
"""

from __future__ import annotations

import ast

import pytest

from course_grader.verdict.shipping import Shipped

FIXTURE = "def check_equivalent(reference, candidate):\n{}\n"
TESTS = ("ex04-test-faithful", "ex04-test-values", "ex04-test-grad-mode", "ex04-hidden-dtype", "ex04-hidden-shape")


def fixture(*lines: str, head: str = "") -> dict[str, str]:
    return {"ex04-fixture": head + FIXTURE.format("\n".join("    " + line for line in lines))}


def _cases(source: str) -> list[tuple]:
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "cases")
    return ast.literal_eval(node.value)


def test_every_test_mixes_faithful_and_faulty_compiled_and_plain(exercises):
    everything = []
    for cell in exercises["ex04"].tests:
        cases = _cases(cell.source)
        assert {right for *_, right in cases} == {True, False}, cell.course_id
        everything += cases
    compiled = {cand for _, _, cand, _ in everything if "compiled" in cand}
    faithful = {cand for _, _, cand, right in everything if right}
    candidates = {cand for _, _, cand, _ in everything}
    assert compiled & faithful and compiled - faithful and faithful - compiled and candidates - compiled - faithful
    assert sorted(c.course_id for c in exercises["ex04"].tests) == sorted(TESTS)
    assert all(c.points == 2 for c in exercises["ex04"].tests)


def test_what_the_child_receives_names_no_verdict(exercises):
    for cell in exercises["ex04"].tests:
        shipped = Shipped(cell.source)
        for what, ref, cand, _ in _cases(cell.source):
            for expression in (ref, cand):
                text, defs = shipped.expression(expression)
                sent = (text + "\n".join(defs)).lower()
                for word in ("faithful", "fault", "wrong", "mistake", "right", "#", what.lower()):
                    assert word not in sent, (cell.course_id, expression, word)


def test_model_answer_passes_every_test(grade_with, model_cells):
    verdicts = grade_with("ex04", model_cells("ex04"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize("answer", ["True", "False"])
def test_constant_fixtures_earn_nothing(grade_with, answer):
    verdicts = grade_with("ex04", fixture(f"return {answer}"))
    assert not any(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}
    wrong = "NOT equivalent" if answer == "True" else "faithful"
    assert all(f"said {answer}, but the candidate is {wrong}" in v.message for v in verdicts.values())


def test_a_non_bool_answer_is_not_an_answer(grade_with):
    verdicts = grade_with("ex04", fixture("return 1"))
    assert not any(v.passed for v in verdicts.values())
    assert "returned 1, not a bool" in verdicts["ex04-test-faithful"].message
    verdicts = grade_with("ex04", fixture("return torch.tensor(True)"))
    assert not any(v.passed for v in verdicts.values())
    assert "returned tensor(True), not a bool" in verdicts["ex04-test-values"].message


def test_a_raising_fixture_is_told_what_it_raised(grade_with):
    verdicts = grade_with("ex04", fixture("raise ValueError('no idea')"))
    assert not any(v.passed for v in verdicts.values())
    assert "your fixture raised ValueError: no idea" in verdicts["ex04-hidden-shape"].message


def _compare_with(cases: str) -> dict[str, str]:
    return fixture("modes = ('train', 'eval') if isinstance(reference, nn.Module) else (None,)",
                   "g = torch.Generator().manual_seed(0)",
                   "xs = [torch.randn(n, 4, generator=g).to(d) for d in (torch.float32, torch.float64) "
                   "for n in (2, 3, 8, 9, 32)]",
                   "nan, inf = float('nan'), float('inf')",
                   "xs.append(torch.tensor([[0.0, -0.0, nan, 1.0], [-1.0, 2.0, -0.0, 0.0], [0.5, -3.0, inf, -inf]]))",
                   f"cases = [{cases} for i, x in enumerate(xs) for m in modes]",
                   "return compare(reference, candidate, cases).ok")


def test_a_fixture_without_gradients_fails_only_the_gradient_test(grade_with):
    verdicts = grade_with("ex04", _compare_with("Case(str(i) + str(m), (x,), mode=m)"))
    failed = {k for k, v in verdicts.items() if not v.passed}
    assert failed == {"ex04-test-grad-mode"}, {k: v.message for k, v in verdicts.items()}
    message = verdicts["ex04-test-grad-mode"].message
    assert "x * x.detach() (wrong gradient), compiled: your fixture said True" in message
    assert "1 of 4 candidates judged wrongly" in message


def test_a_fixture_in_eval_mode_only_misses_the_forced_eval_blocks(grade_with):
    verdicts = grade_with("ex04", _compare_with("Case(str(i), (x,), mode='eval' if m else None, grad=True)"))
    failed = {k for k, v in verdicts.items() if not v.passed}
    assert failed == {"ex04-test-grad-mode"}, {k: v.message for k, v in verdicts.items()}
    message = verdicts["ex04-test-grad-mode"].message
    assert "2 of 4 candidates judged wrongly" in message and "forced into eval mode" in message


def test_a_weak_fixture_loses_the_hidden_tests(grade_with):
    verdicts = grade_with("ex04", fixture(
        "x = torch.tensor([[0.0, -0.0, float('nan'), 1.0], [-1.0, 2.0, float('inf'), -2.0],"
        " [0.5, -3.0, 0.0, 2.0], [1.5, -0.5, 3.0, -2.0]])",
        "modes = ('train', 'eval') if isinstance(reference, nn.Module) else (None,)",
        "return compare(reference, candidate, [Case(str(m), (x,), mode=m, grad=True) for m in modes]).ok"))
    assert {k for k, v in verdicts.items() if not v.passed} == {"ex04-hidden-dtype", "ex04-hidden-shape"}


def test_candidates_look_alike_from_outside(grade_with):
    # repr, type and hasattr see one function form and one module form, whatever the candidate is
    verdicts = grade_with("ex04", fixture(
        "text = repr(candidate)",
        "return 'Optimized' in text or 'compile' in text or 'Eval' in text or hasattr(candidate, '_orig_mod')"))
    assert not any(v.passed for v in verdicts.values())


def test_a_call_counter_learns_nothing(grade_with):
    # each call loads the fixture afresh, so a mutable default does not count calls
    verdicts = grade_with("ex04", {"ex04-fixture": "def check_equivalent(reference, candidate, seen=[]):\n"
                                                   "    seen.append(1)\n"
                                                   "    return len(seen) > 1\n"})
    assert not any(v.passed for v in verdicts.values())
    assert all("your fixture said False, but the candidate is faithful" in v.message for v in verdicts.values())


def test_getattr_is_refused_and_unanswered_fails_every_test(grade_with):
    verdicts = grade_with("ex04", fixture("return getattr(candidate, 'training', True)"))
    assert not any(v.passed for v in verdicts.values())
    assert "`getattr` is not allowed" in verdicts["ex04-test-faithful"].message
    verdicts = grade_with("ex04", {"ex04-fixture": 'raise NotImplementedError("ex04-fixture: replace")'})
    assert not any(v.passed for v in verdicts.values())
    assert "def check_equivalent" in verdicts["ex04-test-faithful"].message
