"""Comparing a measured tensor with the reference's, on the trusted side.

Shape and dtype must be equal; NaN positions, infinities and the sign of every zero
must be equal; finite values may differ only by the rounding a rewrite or a fused
kernel can cause (torch.testing.assert_close's default tolerances). Returns None
when they agree, else a short reason.

The sign of zero follows the course's one rule, stated in ``compile_course.comparison``:
it is part of an output's value (``1/x``, ``copysign`` and ``atan2`` tell ``-0.0`` from
``0.0``), so a flipped zero is "sign of zero differs"; it is not part of a gradient
(autograd adds contributions, and ``-0.0 + 0.0`` is ``0.0``), so gradients are compared
with ``signed_zeros=False``. That also lets a gradient that is an exact zero because two
terms cancel (d(x/|x|)/dx for a 0-d x) come back as a rounding residue (-3e-8 in float32)
from a faithful rewrite that computes the terms in another order; the tolerances accept it.
"""

from __future__ import annotations

import torch

from ..protocol import ProtocolError, decode_tensor

TOLERANCES = {torch.float64: (1e-7, 1e-7), torch.float32: (1.3e-6, 1e-5)}


def decoded(data) -> torch.Tensor | None:
    """The tensor a reply carries; None if the reply is not a well-formed tensor."""
    try:
        return decode_tensor(data)
    except ProtocolError:
        return None


def difference(expected: torch.Tensor, actual: torch.Tensor | None, *, signed_zeros: bool = True) -> str | None:
    if actual is None:
        return "no tensor came back"
    if actual.dtype != expected.dtype:
        return f"dtype {str(actual.dtype).replace('torch.', '')}, expected {str(expected.dtype).replace('torch.', '')}"
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)}, expected {list(expected.shape)}"
    e, a = expected.detach(), actual.detach()
    if not e.is_floating_point():
        return None if torch.equal(e, a) else "values differ"
    if not torch.equal(torch.isnan(e), torch.isnan(a)):
        return "NaN in different places"
    keep = ~torch.isnan(e)
    e, a = e[keep], a[keep]
    if not torch.equal(torch.isinf(e), torch.isinf(a)) or not torch.equal(e[torch.isinf(e)], a[torch.isinf(a)]):
        return "infinities differ"
    rtol, atol = TOLERANCES.get(e.dtype, (0.0, 0.0))
    finite = torch.isfinite(e)
    if not torch.allclose(a[finite], e[finite], rtol=rtol, atol=atol):
        diff = float((a[finite].double() - e[finite].double()).abs().max())
        return f"values differ (max difference {diff:.1e})"
    zeros = e == 0
    if signed_zeros and not bool((a[zeros] == 0).all()):
        return "nonzero where the reference has a zero"
    if signed_zeros and not torch.equal(torch.signbit(e[zeros]), torch.signbit(a[zeros])):
        return "sign of zero differs (0.0 vs -0.0)"
    return None
