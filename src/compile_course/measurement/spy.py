"""Recording how a function is called (Spy), reading such a record back, and remaking its calls for a replay.

A test hands the function under test a :class:`Spy`'s stand-in; what it records travels as data
(``CallResult.spied``), is validated by :func:`read_spy_calls`, and :func:`make_spied_call` makes
fresh arguments like the recorded ones, so the course's own code can make the same calls again on a
function of its own. Not here: the values' codec (``codec``) or the replay itself (``compile_course.testing.replay``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .codec import TENSOR_DTYPES, ReplyError, apply_marks, from_data, tensor_marks, to_data_safe_data

MAX_KEYWORD = 64
MAX_SPIED_CALLS = 1000


class Spy:
    """Records how a function was called (as data) through :attr:`stand_in`, which then calls the real one.

    What it records for a tensor argument: dtype, shape, requires_grad and the dynamic-shape
    marks (``mark_dynamic`` and the others), plus the grad mode of the call. A test can replay
    the record on its own function (``reference.compile``) to see what those calls would compile.

    The function under test is given :attr:`stand_in`, a plain closure: it holds no attribute
    that leads to the record or to the real function (the record is the test's, not the student's).
    """

    def __init__(self, fn=None):
        calls: list = []
        self.calls = calls

        def stand_in(*args, **kwargs):
            if len(calls) < MAX_SPIED_CALLS:
                calls.append({"args": [describe_arg(a) for a in args], "grad_enabled": torch.is_grad_enabled(),
                              "stance": _current_stance(),
                              "kwargs": {str(k)[:MAX_KEYWORD]: describe_arg(v) for k, v in kwargs.items()}})
            return fn(*args, **kwargs) if fn is not None else None

        stand_in.__name__ = stand_in.__qualname__ = getattr(fn, "__name__", "spied")
        self.stand_in = stand_in

    def __call__(self, *args, **kwargs):
        return self.stand_in(*args, **kwargs)


def _current_stance() -> str:
    from torch._dynamo import eval_frame

    return str(getattr(getattr(eval_frame, "_stance", None), "stance", "default"))


def describe_arg(a: Any) -> dict:
    """One argument as a spy records it: a tensor's dtype, shape, requires_grad, marks, device and
    contiguity (not its values); anything else as data."""
    if isinstance(a, torch.Tensor):
        return {"tensor": {"dtype": str(a.dtype).removeprefix("torch."), "shape": list(a.shape),
                           "requires_grad": bool(a.requires_grad), "marks": tensor_marks(a),
                           "device": str(a.device), "contiguous": bool(a.is_contiguous())}}
    return {"value": to_data_safe_data(a)}


def read_spy_calls(data: Any) -> list[dict]:
    """Spy records as data, validated: ``[{"args": [...], "kwargs": {...}, "grad_enabled": bool}]``.

    A replay remakes each call on CPU, contiguous, under the default stance, with the same
    keywords (torch decides whether a keyword call's graph serves positional calls; the replay
    asks it): a record of anything else (a ``meta`` tensor, a call under ``force_eager``) cannot
    be replayed faithfully, so it is refused with a message saying which."""
    if type(data) is not list or len(data) > MAX_SPIED_CALLS:
        raise ReplyError("the recorded calls are malformed")
    out = []
    for n, call in enumerate(data, 1):
        if type(call) is not dict or set(call) != {"args", "kwargs", "grad_enabled", "stance"} \
                or type(call["grad_enabled"]) is not bool or type(call["args"]) is not list or len(call["args"]) > 16 \
                or type(call["kwargs"]) is not dict or len(call["kwargs"]) > 16 \
                or not all(type(k) is str and k.isidentifier() and not k.startswith("_") for k in call["kwargs"]):
            raise ReplyError("a recorded call is malformed")
        if call["stance"] != "default":
            raise ReplyError(f"call {n} was made under torch.compiler.set_stance({str(call['stance'])[:20]!r}): "
                             "a warm-up under another stance compiles nothing that serving would use")
        args = [_read_spied_arg(a, n) for a in call["args"]]
        kwargs = {k: _read_spied_arg(a, n) for k, a in call["kwargs"].items()}
        out.append({"args": args, "kwargs": kwargs, "grad_enabled": call["grad_enabled"]})
    return out


def _read_spied_arg(a: Any, n: int) -> dict:
    if type(a) is dict and set(a) == {"tensor"} and type(a["tensor"]) is dict:
        t = a["tensor"]
        if set(t) != {"dtype", "shape", "requires_grad", "marks", "device", "contiguous"} \
                or t["dtype"] not in TENSOR_DTYPES \
                or type(t["shape"]) is not list or len(t["shape"]) > 8 \
                or not all(type(d) is int and 0 <= d <= 1 << 20 for d in t["shape"]) \
                or math.prod(t["shape"]) > 1 << 22 or type(t["requires_grad"]) is not bool \
                or type(t["marks"]) is not dict:
            raise ReplyError("a recorded tensor argument is malformed")
        if t["device"] != "cpu" or t["contiguous"] is not True:
            raise ReplyError(f"call {n} was made with a tensor on {str(t['device'])[:20]!r}"
                             f"{'' if t['contiguous'] is True else ', not contiguous'}: "
                             "serving calls are contiguous CPU tensors")
        return {"tensor": {k: t[k] for k in ("dtype", "shape", "requires_grad", "marks")}}
    if type(a) is dict and set(a) == {"value"}:
        return {"value": from_data(a["value"])}
    raise ReplyError("a recorded argument is malformed")


def make_spied_args(call: dict, seed: int = 0) -> tuple[tuple, bool]:
    """Fresh positional arguments like the ones a recorded call had (random values, same dtype, shape,
    marks), and its grad mode. Its keyword arguments: :func:`make_spied_call`."""
    args, _, grad_enabled = make_spied_call(call, seed)
    return args, grad_enabled


def make_spied_call(call: dict, seed: int = 0) -> tuple[tuple, dict, bool]:
    """Fresh ``(args, kwargs, grad mode)`` like a recorded call's (random values; same dtypes, shapes, marks)."""
    g = torch.Generator().manual_seed(seed)
    args = tuple(_spied_value(a, g) for a in call["args"])
    kwargs = {k: _spied_value(a, g) for k, a in (call.get("kwargs") or {}).items()}
    return args, kwargs, call["grad_enabled"]


def _spied_value(a: dict, g: torch.Generator) -> Any:
    if "tensor" not in a:
        return a["value"]
    t = a["tensor"]
    dtype = getattr(torch, t["dtype"])
    x = torch.randn(t["shape"], generator=g).to(dtype) if dtype.is_floating_point \
        else torch.zeros(t["shape"], dtype=dtype)
    marks = t["marks"]
    if not all(type(v) is list and all(type(d) is int and 0 <= d < x.dim() for d in v)
               for v in marks.values()) or set(marks) - {"dynamic", "maybe_dynamic", "static", "unbacked"}:
        raise ReplyError("a recorded tensor's marks are malformed")
    if t["requires_grad"] and dtype.is_floating_point:
        x.requires_grad_(True)
    return apply_marks(x, marks)
