"""ex01 graded from its notebook's test cells: the rewrite must capture as one graph and change nothing."""

from __future__ import annotations

REWRITE = "def safe_normalize_rewrite(x):\n{}\n"


def body(*lines: str) -> dict[str, str]:
    return {"ex01-rewrite": REWRITE.format("\n".join("    " + line for line in lines))}


def test_model_answer_passes_every_test(grade_with, model_cells):
    verdicts = grade_with("ex01", model_cells("ex01"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


def test_the_reference_itself_breaks_and_the_capture_test_quotes_torch(grade_with):
    verdicts = grade_with("ex01", body("norm = x.norm()", "if norm > 0:", "    return x / norm", "return x"))
    capture = verdicts["ex01-test-capture"]
    assert not capture.passed
    assert "graph break" in capture.message and "GB" in capture.message  # torch's own GB id
    # the values are measured compiled with fullgraph=True: torch's own error is the message
    assert "Data-dependent branching" in verdicts["ex01-test-values"].message


def test_naive_where_fails_only_the_hidden_gradients(grade_with):
    verdicts = grade_with("ex01", body("norm = x.norm()", "return torch.where(norm > 0, x / norm, x)"))
    assert verdicts["ex01-test-capture"].passed and verdicts["ex01-test-values"].passed
    assert not verdicts["ex01-hidden-boundary"].passed
    assert "gradient" in verdicts["ex01-hidden-boundary"].message


def test_correct_when_compiled_but_raising_eagerly_fails_the_values(grade_with):
    # the v2 finding: a rewrite whose eager path was barely measured got 8/8
    verdicts = grade_with("ex01", body(
        "if not torch.compiler.is_compiling():",
        "    raise RuntimeError('eager path')",
        "norm = x.norm()",
        "return torch.where(norm > 0, x / torch.where(norm > 0, norm, torch.ones_like(norm)), x)"))
    assert verdicts["ex01-test-capture"].passed
    assert not verdicts["ex01-test-values"].passed
    assert "called eagerly" in verdicts["ex01-test-values"].message


def test_unanswered_fails_every_test_with_a_message(grade_with):
    verdicts = grade_with("ex01", {"ex01-rewrite": 'raise NotImplementedError("ex01-rewrite: replace")'})
    assert not any(v.passed for v in verdicts.values())
    assert "def safe_normalize_rewrite" in verdicts["ex01-test-capture"].message


def test_a_torch_cond_answer_is_told_the_grader_cannot_check_it(grade_with):
    # the adversary's hon1: right values, one graph, but its branches are subgraphs (get_attr nodes) and
    # torch.ops.higher_order.cond, which a replay refuses (harness.denied); the message says so in its words
    verdicts = grade_with("ex01", body("norm = x.norm()",
                                       "return torch.cond(norm > 0, lambda t: t / norm, lambda t: t.clone(), (x,))"))
    for test in ("ex01-test-capture", "ex01-test-values"):
        assert not verdicts[test].passed
        assert "torch.cond or another higher-order operator" in verdicts[test].message, verdicts[test].message
        assert "get_attr" not in verdicts[test].message
