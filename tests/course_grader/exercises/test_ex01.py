"""ex01: the model rewrite earns every test; rewrites that change the function lose the right ones."""

from __future__ import annotations

import pytest

NAIVE = '''
def safe_normalize_rewrite(x):
    norm = x.norm()
    return torch.where(norm > 0, x / norm, x)
'''
SIGN_LOST = '''
def safe_normalize_rewrite(x):
    norm = x.norm()
    safe = torch.where(norm > 0, norm, torch.ones_like(norm))
    return torch.where(norm > 0, x / safe, x + 0.0)
'''
STILL_BRANCHES = '''
def safe_normalize_rewrite(x):
    norm = x.norm()
    if norm > 0:
        return x / norm
    return x
'''
# Honest but unusual: a local named max, a helper function and a constant in the same cell.
UNUSUAL = '''
ONE = 1.0

def _guard(norm):
    return torch.where(norm > 0, norm, torch.full_like(norm, ONE))

def safe_normalize_rewrite(x):
    max = x.norm()          # shadows a builtin: that is not tampering
    ok = max > 0
    return torch.where(ok, x / _guard(max), x)
'''
# Honest: multiplies by a where-guarded reciprocal. Its gradient at a 0-d input is a rounding
# residue (-3e-8 in float32) where the reference's terms cancel to an exact 0.
RECIPROCAL = '''
def safe_normalize_rewrite(x):
    positive = x.detach().norm() > 0
    n = torch.where(positive, x, torch.ones_like(x)).norm()
    scale = torch.where(positive, 1.0 / n, torch.ones_like(n))
    return x * scale
'''


def test_model_answer_passes_everything(grade_with, model_cells):
    verdicts = grade_with("ex01", model_cells("ex01"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize("source, failing", [
    (NAIVE, {"ex01-hidden-boundary"}),                          # NaN gradient at the zero vector
    (SIGN_LOST, {"ex01-hidden-boundary"}),                      # -0.0 becomes 0.0
    (STILL_BRANCHES, {"ex01-test-capture", "ex01-test-values", "ex01-hidden-boundary"}),
    (UNUSUAL, set()),
    (RECIPROCAL, set()),
])
def test_rewrites_lose_exactly_the_tests_they_should(grade_with, source, failing):
    verdicts = grade_with("ex01", {"ex01-rewrite": source})
    assert {k for k, v in verdicts.items() if not v.passed} == failing, {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize("source, phrase", [
    ('raise NotImplementedError("ex01-rewrite: replace this line with your answer")', "no `def safe_normalize_rewrite"),
    ("def safe_normalize_rewrite(x):\n    torch.where = lambda *a: a[1]\n    return x", "assigning to an attribute"),
    ("def safe_normalize_rewrite(x):\n    return getattr(torch, 'where')(x > 0, x, x)", "`getattr` is not allowed"),
    ("import os\ndef safe_normalize_rewrite(x):\n    return os.getcwd()", "`os` is not available"),
])
def test_unusable_answers_fail_every_test_with_the_reason(grade_with, source, phrase):
    verdicts = grade_with("ex01", {"ex01-rewrite": source})
    assert not any(v.passed for v in verdicts.values())
    assert all(phrase in v.message for v in verdicts.values()), [v.message for v in verdicts.values()]
