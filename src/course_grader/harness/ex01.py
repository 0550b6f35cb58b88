"""ex01 in the measuring process: capture and outputs of the student's ``safe_normalize_rewrite``.

Entry ``run(payload)``: ``payload = {"source": allow-listed source, "cases": [{"label", "x": tensor, "grad": bool}]}``.
Replies ``{"capture": {...}, "results": [...]}``: torch's own counts from
``torch._dynamo.explain``, whether ``fullgraph=True`` compiled (and the error's type
name if not), and for each case the compiled function's output (and input
gradient) as tensor data. The grader compares them with the reference.
"""

from __future__ import annotations

import torch

from ..protocol import decode_tensor, encode_tensor
from .allowlist import AllowList, load_checked
from .common import error_text, fresh_compiler, restore_global_state, upstream_gradient

FUNCTION = "safe_normalize_rewrite"
ALLOWED = AllowList(provided=frozenset({"torch"}))
CAPTURE_EXAMPLE = (3.0, -4.0)


def _capture(fn) -> dict:
    counts, fullgraph_errors = [], []
    for dtype in (torch.float32, torch.float64):
        restore_global_state()
        x = torch.tensor(CAPTURE_EXAMPLE, dtype=dtype)
        fresh_compiler()
        try:
            report = torch._dynamo.explain(fn)(x)
            counts.append([int(report.graph_count), int(report.graph_break_count)])
        except Exception as exc:  # noqa: BLE001 - any failure is data for the trusted side
            counts.append([-1, -1])
            fullgraph_errors.append(f"explain: {error_text(exc)}")
        fresh_compiler()
        try:
            torch.compile(fn, backend="eager", fullgraph=True)(x)
        except Exception as exc:  # noqa: BLE001
            fullgraph_errors.append(f"{str(dtype).replace('torch.', '')}: {error_text(exc)}")
    return {"explain": counts, "fullgraph_errors": fullgraph_errors}


def _case(fn, case: dict) -> dict:
    x = decode_tensor(case["x"])
    grad = case["grad"] is True
    if grad:
        x.requires_grad_(True)
    restore_global_state()
    fresh_compiler()  # each case compiles anew: no recompile limit, no state from an earlier case
    compiled = torch.compile(fn, backend="eager", fullgraph=True)
    try:
        out = compiled(x)
        if not isinstance(out, torch.Tensor):
            return {"label": case["label"], "error": f"returned {type(out).__name__}, not a tensor"}
        result = {"label": case["label"], "out": encode_tensor(out), "error": None}
        if grad:
            if not out.requires_grad:
                result["error"] = "the output does not require grad: no gradient flows to x"
                return result
            (g,) = torch.autograd.grad(out, x, upstream_gradient(out.detach()), allow_unused=True)
            result["grad"] = encode_tensor(g) if g is not None else None
        return result
    except Exception as exc:  # noqa: BLE001
        return {"label": case["label"], "error": error_text(exc)}


def run(payload: dict) -> dict:
    try:
        fn = load_checked(payload["source"], FUNCTION, ALLOWED, {"torch": torch})
    except Exception as exc:  # noqa: BLE001 - the trusted side already checked; this is a second line
        return {"load_error": error_text(exc)}
    return {"load_error": None, "capture": _capture(fn), "results": [_case(fn, c) for c in payload["cases"]]}
