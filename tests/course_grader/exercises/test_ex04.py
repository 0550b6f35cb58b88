"""ex04: the fixture judges candidates it cannot recognise; every test mixes faithful and faulty ones."""

from __future__ import annotations

from course_grader.exercises import ex04
from course_grader.harness import ex04 as harness


def test_every_test_mixes_faithful_and_faulty_compiled_and_plain():
    for test_id, expected in ex04.TESTS.items():
        assert True in expected.values() and False in expected.values(), test_id
    names = {n for expected in ex04.TESTS.values() for n in expected}
    compiled = {n for n in names if "compiled" in n}
    faithful = {n for expected in ex04.TESTS.values() for n, ok in expected.items() if ok}
    assert compiled & faithful and compiled - faithful and faithful - compiled and names - compiled - faithful


def test_candidates_look_alike_from_outside():
    reprs = set()
    for name in ex04.TESTS["ex04-test-faithful"]:
        _, candidate = harness.build(name)
        text = repr(candidate)
        reprs.add(text.split(" at 0x")[0] if text.startswith("<function") else text)
    assert len(reprs) == 2   # one function form, one module form, whatever the candidate is


def test_constant_fixtures_earn_nothing(grade_with):
    for answer in ("True", "False"):
        fixture = f"def check_equivalent(reference, candidate):\n    return {answer}\n"
        verdicts = grade_with("ex04", {"ex04-fixture": fixture})
        assert not any(v.passed for v in verdicts.values())


def test_model_fixture_passes_and_a_weak_one_loses_the_hidden_tests(grade_with, model_cells):
    verdicts = grade_with("ex04", model_cells("ex04"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}
    weak = ("def check_equivalent(reference, candidate):\n"
            "    x = torch.tensor([[0.0, -0.0, float('nan'), 1.0], [-1.0, 2.0, float('inf'), -2.0],"
            " [0.5, -3.0, 0.0, 2.0], [1.5, -0.5, 3.0, -2.0]])\n"
            "    modes = ('train', 'eval') if isinstance(reference, nn.Module) else (None,)\n"
            "    return compare(reference, candidate, [Case(str(m), (x,), mode=m, grad=True) for m in modes]).ok\n")
    verdicts = grade_with("ex04", {"ex04-fixture": weak})
    assert {k for k, v in verdicts.items() if not v.passed} == {"ex04-hidden-dtype", "ex04-hidden-shape"}


def test_a_non_bool_answer_is_not_an_answer(grade_with):
    verdicts = grade_with("ex04", {"ex04-fixture": "def check_equivalent(reference, candidate):\n    return 1\n"})
    assert not any(v.passed for v in verdicts.values())
    assert "not a bool" in verdicts["ex04-test-faithful"].message


def test_fixture_may_use_hasattr_and_cell_constants_but_not_getattr():
    import pytest

    from course_grader.allowlist import AllowListError, extract_function, load_checked
    cell = ("DTYPES = (torch.float32, torch.float64)\n"
            "def check_equivalent(reference, candidate):\n"
            "    probe = hasattr(candidate, '__dict__'), hasattr(candidate, '_orig_mod')\n"
            "    return probe, [d for d in DTYPES]\n")
    fn = load_checked(extract_function(cell, "check_equivalent", harness.ALLOWED), "check_equivalent",
                      harness.ALLOWED, {"torch": harness.torch})
    probe, dtypes = fn(harness.torch.nn.Linear(1, 1), harness.torch.nn.Linear(1, 1))
    assert all(type(p) is bool for p in probe)   # hasattr answers yes/no, never a value
    assert dtypes == [harness.torch.float32, harness.torch.float64]
    with pytest.raises(AllowListError, match="getattr"):
        extract_function(cell.replace("hasattr(candidate, '__dict__')", "getattr(candidate, '__dict__')"),
                         "check_equivalent", harness.ALLOWED)
