"""Compare an eager reference with a transformed callable over a declared domain.

A single correct call proves little. ``compare`` runs the reference and the
candidate on every declared ``Case`` (shapes, dtypes, boundary values, module
modes, gradients, and inputs that must raise) and reports, case by case,
whether the outputs are ``exact``, ``close`` within the dtype's tolerance, or
a mismatch, with the reason. The printed report is stable from run to run.

The sign of zero is part of an output's value: ``-0.0 == 0.0``, yet ``1/x``,
``copysign`` and ``atan2`` tell them apart downstream, so an output whose zero has
the other sign fails, reported as "sign of zero differs", even within a tolerance.
Gradients are the one exception: the sign of a zero gradient depends on how the
backward adds up its terms, which a compiled backward may do differently (for
``torch.sign(x) * x`` at ``x = 0`` with upstream ``-1``, eager sums ``-0.0`` and
``sign``'s ``0.0`` into ``0.0``; inductor returns ``-0.0``), so there a flipped zero
passes, reported as "close (sign of zero differs)".
The course's other checks (``compile_course.checks``, the grader) apply the same rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

# (rtol, atol, why). Float tolerances are torch.testing.assert_close's defaults:
# a compiled kernel may fuse or reorder arithmetic, so the last bits can move.
TOLERANCES: dict[torch.dtype, tuple[float, float, str]] = {
    torch.float64: (1e-7, 1e-7, "float64: fused/reordered arithmetic may move the last bits"),
    torch.float32: (1.3e-6, 1e-5, "float32: fused/reordered arithmetic may move the last bits"),
    torch.float16: (1e-3, 1e-5, "float16: 10-bit mantissa, rounding of intermediates differs"),
    torch.bfloat16: (1.6e-2, 1e-5, "bfloat16: 7-bit mantissa, rounding of intermediates differs"),
}
EXACT_REASON = "integers and bools have no rounding: any difference is a bug"


def tolerance(dtype: torch.dtype) -> tuple[float, float, str]:
    """``(rtol, atol, reason)`` used for ``dtype``; (0, 0) for non-float dtypes."""
    return TOLERANCES.get(dtype, (0.0, 0.0, EXACT_REASON))


@dataclass
class Case:
    """One point of the input domain.

    ``args`` are passed to both callables (tensors are cloned for each call).
    ``mode`` is ``"train"`` or ``"eval"`` for modules. ``grad=True`` also
    compares gradients of the floating-point inputs (and module parameters).
    ``seed`` is set before each call so random ops draw the same numbers.
    """

    label: str
    args: tuple
    mode: str | None = None
    grad: bool = False
    seed: int = 0


@dataclass
class Verdict:
    ok: bool
    text: str


@dataclass
class CaseResult:
    case: Case
    output: Verdict
    grad: Verdict | None

    @property
    def ok(self) -> bool:
        return self.output.ok and (self.grad is None or self.grad.ok)


@dataclass
class CompareReport:
    results: list[CaseResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if not r.ok]

    def __str__(self) -> str:
        rows = [("case", "output", "gradients", "")]
        for r in self.results:
            rows.append((r.case.label, r.output.text, r.grad.text if r.grad else "-", "ok" if r.ok else "FAIL"))
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = [" | ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True))
                 + f" | {row[3]}".rstrip(" |") for row in rows]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        passed = sum(r.ok for r in self.results)
        lines.append(f"{passed}/{len(self.results)} cases agree"
                     + ("" if self.ok else "  <-- the candidate is NOT equivalent"))
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise ``AssertionError`` with the report if any case disagrees."""
        if not self.ok:
            raise AssertionError("eager and candidate disagree:\n" + str(self))


def compare_tensors(expected: torch.Tensor, actual: torch.Tensor, *, signed_zeros: bool = True) -> Verdict:
    """Compare one pair of tensors: shape, dtype, NaN positions, infinities, signs of zero, then values.

    ``signed_zeros=False`` (used for gradients only, see the module docstring) lets a zero
    of the other sign pass as "close".
    """
    if expected.shape != actual.shape:
        return Verdict(False, f"shape {list(actual.shape)} != {list(expected.shape)}")
    if expected.dtype != actual.dtype:
        return Verdict(False, f"dtype {_dt(actual.dtype)} != {_dt(expected.dtype)}")
    e, a = expected.detach(), actual.detach()
    if _bitwise_equal(e, a):
        return Verdict(True, "exact")
    if not e.is_floating_point():
        return Verdict(False, f"values differ ({int((e != a).sum())} elements)")
    if not torch.equal(torch.isnan(e), torch.isnan(a)):
        return Verdict(False, "NaN positions differ")
    rtol, atol, _ = tolerance(e.dtype)
    finite = torch.isfinite(e) & torch.isfinite(a)
    if not torch.equal(e[~finite].nan_to_num(), a[~finite].nan_to_num()):
        return Verdict(False, "infinities differ")
    diff = (e[finite].double() - a[finite].double()).abs()
    max_diff = float(diff.max()) if diff.numel() else 0.0
    if not torch.allclose(a[finite], e[finite], rtol=rtol, atol=atol):
        return Verdict(False, f"values differ, max diff {max_diff:.1e}")
    both_zero = (e == 0) & (a == 0)
    if not torch.equal(torch.signbit(e[both_zero]), torch.signbit(a[both_zero])):
        if signed_zeros:
            return Verdict(False, "sign of zero differs")
        if max_diff == 0.0:
            return Verdict(True, "close (sign of zero differs)")
    return Verdict(True, f"close, max diff {max_diff:.1e}")


def _bitwise_equal(e: torch.Tensor, a: torch.Tensor) -> bool:
    """Equal values, equal NaN positions and equal signs of zero."""
    if not e.is_floating_point():
        return torch.equal(e, a)
    if not torch.equal(torch.isnan(e), torch.isnan(a)):
        return False
    keep = ~torch.isnan(e)
    return torch.equal(e[keep], a[keep]) and torch.equal(torch.signbit(e[keep]), torch.signbit(a[keep]))


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def compare_values(expected: Any, actual: Any, *, signed_zeros: bool = True) -> Verdict:
    """Compare two outputs leaf by leaf (tensors, numbers, tuples, dicts)."""
    e_leaves, e_spec = tree_flatten(expected)
    a_leaves, a_spec = tree_flatten(actual)
    if e_spec != a_spec:
        return Verdict(False, "output structure differs")
    verdicts = []
    for e, a in zip(e_leaves, a_leaves, strict=True):  # same spec, so the same number of leaves
        if isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor):
            verdicts.append(compare_tensors(e, a, signed_zeros=signed_zeros))
        elif isinstance(e, torch.Tensor) or isinstance(a, torch.Tensor):
            verdicts.append(Verdict(False, f"type {type(a).__name__} != {type(e).__name__}"))
        elif (signed_zeros and isinstance(e, float) and isinstance(a, float) and e == a == 0.0
              and math.copysign(1.0, e) != math.copysign(1.0, a)):
            verdicts.append(Verdict(False, "sign of zero differs"))
        else:
            verdicts.append(Verdict(e == a, "exact" if e == a else f"{a!r} != {e!r}"))
    bad = [v for v in verdicts if not v.ok]
    if bad:
        return bad[0]
    close = [v for v in verdicts if v.text != "exact"]
    return close[0] if close else Verdict(True, "exact")


def _clone_args(args: tuple, grad: bool) -> tuple:
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            c = a.detach().clone()
            if grad and c.is_floating_point():
                c.requires_grad_(True)
            out.append(c)
        else:
            out.append(a)
    return tuple(out)


def _set_mode(fn: Callable, mode: str | None) -> None:
    if mode is None:
        return
    if not hasattr(fn, "train"):
        raise TypeError(f"mode={mode!r} needs an nn.Module, got {type(fn).__name__}")
    fn.train(mode == "train")


def _weights_like(t: torch.Tensor) -> torch.Tensor:
    """A fixed, non-uniform upstream gradient, so a permuted or sign-flipped grad shows."""
    n = max(t.numel(), 1)
    return torch.linspace(1.0, 2.0, n, dtype=t.dtype).reshape(t.shape) if t.numel() else torch.ones_like(t)


def _run(fn: Callable, case: Case) -> tuple[str, Any, list]:
    """Call ``fn`` on a copy of the case's inputs: ('ok', out, grads) or ('error', exc, [])."""
    _set_mode(fn, case.mode)
    args = _clone_args(case.args, case.grad)
    torch.manual_seed(case.seed)
    try:
        out = fn(*args)
    except Exception as exc:  # the reference's error is part of the contract
        return "error", exc, []
    grads: list = []
    if case.grad:
        leaves = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor) and o.requires_grad]
        params = [p for p in getattr(fn, "parameters", lambda: [])() if p.requires_grad]
        for p in params:
            p.grad = None
        if leaves:
            torch.autograd.backward(leaves, [_weights_like(o) for o in leaves])
        grads = [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        grads += [p.grad.clone() if p.grad is not None else None for p in params]
        for p in params:
            p.grad = None
    return "ok", out, grads


def compare(reference: Callable, candidate: Callable, cases: list[Case]) -> CompareReport:
    """Run both callables on every case and report where they agree."""
    report = CompareReport()
    for case in cases:
        r_status, r_out, r_grads = _run(reference, case)
        c_status, c_out, c_grads = _run(candidate, case)
        grad_verdict = None
        if r_status == "error" or c_status == "error":
            output = _compare_errors(r_status, r_out, c_status, c_out)
        else:
            output = compare_values(r_out, c_out)
            if case.grad:
                grad_verdict = (compare_values(r_grads, c_grads, signed_zeros=False) if r_grads
                                else Verdict(False, "no gradients produced"))
        report.results.append(CaseResult(case, output, grad_verdict))
    return report


def _compare_errors(r_status, r_val, c_status, c_val) -> Verdict:
    if r_status == "error" and c_status == "error":
        if isinstance(c_val, type(r_val)):
            return Verdict(True, f"both raise {type(r_val).__name__}")
        return Verdict(False, f"raises {type(c_val).__name__}, eager raises {type(r_val).__name__}")
    if r_status == "error":
        return Verdict(False, f"returns a value, eager raises {type(r_val).__name__}")
    return Verdict(False, f"raises {type(c_val).__name__}, eager returns a value")


def tolerance_table(dtypes=(torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64)) -> str:
    """The tolerance used for each dtype, with the reason, as printable text."""
    lines = []
    for d in dtypes:
        rtol, atol, why = tolerance(d)
        lines.append(f"{_dt(d):9} rtol={rtol:<7g} atol={atol:<7g} {why}")
    return "\n".join(lines)
