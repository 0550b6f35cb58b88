"""ex01 verdicts: a rewrite of ``safe_normalize`` that captures as one graph and changes nothing.

The student's ``safe_normalize_rewrite`` (allow-listed source) runs in the measuring
process, compiled with ``backend="eager", fullgraph=True``, on inputs made here. The
reference runs here, eagerly, on the same inputs; outputs and input gradients are
compared by ``_tensors.difference`` (dtype, NaN, infinities and an output's signed zeros
exact; a gradient's zero may have either sign, the course's rule).
"""

from __future__ import annotations

import torch

from ..context import AnswerError, GradeContext, TestVerdict, excerpt
from ..harness.common import upstream_gradient
from ..harness.ex01 import ALLOWED, FUNCTION
from ..protocol import encode_tensor
from ._tensors import decoded, difference

HARNESS = "ex01"
ANSWER_CELL = "ex01-rewrite"
DTYPES = (torch.float32, torch.float64)


def safe_normalize(x):
    """The exercise's reference (the locked cell's function)."""
    norm = x.norm()
    if norm > 0:
        return x / norm
    return x


def public_cases() -> list[tuple[str, torch.Tensor, bool]]:
    g = torch.Generator().manual_seed(1)
    cases = []
    for dtype in DTYPES:
        name = str(dtype).replace("torch.", "")
        for shape in [(2,), (5,), (3, 4)]:
            cases.append((f"{name} {list(shape)} random", torch.randn(shape, generator=g).to(dtype), True))
        cases.append((f"{name} zero vector (values)", torch.zeros(4, dtype=dtype), False))
    return cases


def hidden_cases() -> list[tuple[str, torch.Tensor, bool]]:
    nan, inf = float("nan"), float("inf")
    cases = []
    for dtype in DTYPES:
        name = str(dtype).replace("torch.", "")

        def t(values, dtype=dtype):
            return torch.tensor(values, dtype=dtype)

        cases += [
            (f"{name} zero vector, gradients", t([0.0, 0.0, 0.0]), True),
            (f"{name} -0.0 entries", t([-0.0, 0.0, -0.0]), False),
            (f"{name} -0.0 entries, gradients", t([-0.0, 0.0]), True),
            (f"{name} NaN entry", t([nan, 1.0, -2.0]), False),
            (f"{name} infinity", t([inf, 1.0]), False),
            (f"{name} tiny values, gradients", t([1e-30, 0.0, -1e-30]), True),
            (f"{name} 0-dim", t(-2.5), True),
            (f"{name} 0-dim zero, gradients", t(0.0), True),
            (f"{name} 2-d with a zero row", t([[0.0, 0.0], [3.0, 4.0]]), True),
        ]
    return cases


def reference(x: torch.Tensor, grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    x = x.detach().clone().requires_grad_(grad)
    out = safe_normalize(x)
    if not grad:
        return out.detach(), None
    (g,) = torch.autograd.grad(out, x, upstream_gradient(out.detach()), allow_unused=True)
    return out.detach(), g


def _case_problems(cases, results: list) -> list[str]:
    problems = []
    by_label = {r.get("label"): r for r in results if isinstance(r, dict)}
    for label, x, grad in cases:
        r = by_label.get(label)
        if r is None:
            problems.append(f"{label}: no result")
            continue
        if r.get("error"):
            problems.append(f"{label}: {excerpt(r['error'])}")
            continue
        want, want_grad = reference(x, grad)
        why = difference(want, decoded(r.get("out")))
        if why:
            problems.append(f"{label}: output {why}")
        elif grad:
            got = decoded(r["grad"]) if r.get("grad") is not None else None
            if want_grad is not None:
                why = difference(want_grad, got, signed_zeros=False)
            else:
                why = None if got is None else "unexpected gradient"
            if why:
                problems.append(f"{label}: gradient {why}")
    return problems


def _verdict(test_id: str, problems: list[str], ok_message: str, what: str) -> TestVerdict:
    if not problems:
        return TestVerdict(test_id, True, ok_message)
    shown = "\n".join(f"  {p}" for p in problems[:6])
    more = f"\n  ... and {len(problems) - 6} more" if len(problems) > 6 else ""
    return TestVerdict(test_id, False, f"{what}: {len(problems)} case(s) disagree with the reference:\n{shown}{more}")


def grade(ctx: GradeContext) -> list[TestVerdict]:
    ids = ("ex01-test-capture", "ex01-test-values", "ex01-hidden-boundary")
    try:
        source = ctx.function_source(ANSWER_CELL, FUNCTION, ALLOWED)
    except AnswerError as exc:
        return [TestVerdict(i, False, str(exc)) for i in ids]
    public, hidden = public_cases(), hidden_cases()
    payload = {"source": source,
               "cases": [{"label": label, "x": encode_tensor(x), "grad": grad} for label, x, grad in public + hidden]}
    reply = ctx.measure("run", payload)
    if reply.get("load_error"):
        why = excerpt(reply["load_error"])
        return [TestVerdict(i, False, f"your function could not be loaded: {why}") for i in ids]
    capture = reply.get("capture") or {}
    counts, errors = capture.get("explain"), capture.get("fullgraph_errors")
    capture_problems = []
    if counts != [[1, 0], [1, 0]]:
        capture_problems.append(f"torch._dynamo.explain reports [graphs, breaks] = {counts} for float32 and float64; "
                                "the contract is [1, 0]")
    if errors:
        capture_problems += [f"torch.compile(..., fullgraph=True) raised: {e}" for e in errors]
    results = reply.get("results") or []
    return [
        TestVerdict("ex01-test-capture", not capture_problems,
                    "\n".join(capture_problems)
                    or "1 graph, 0 breaks, and fullgraph=True compiles (float32 and float64)"),
        _verdict("ex01-test-values", _case_problems(public, results),
                 f"values, dtypes and gradients agree on {len(public)} public cases", "public cases"),
        _verdict("ex01-hidden-boundary", _case_problems(hidden, results),
                 f"boundary values and gradients agree on {len(hidden)} hidden cases", "hidden cases"),
    ]
