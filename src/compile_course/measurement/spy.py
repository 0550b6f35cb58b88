"""Recording how a function is called (Spy), checking the record against what the calls compiled, and remaking them.

A test hands the function under test a :class:`Spy`'s stand-in; what it records travels as data
(``CallResult.spied``), is validated by :func:`read_spy_calls`, and :func:`make_spied_call` makes
fresh arguments like the recorded ones, so the course's own code can make the same calls again on a
function of its own. A record says only what the calls were; whether making them again reproduces
what they did is not taken on trust: the stand-in's calls really compile, and :meth:`Spy.records`
asks torch, once the function under test has returned, whether what they compiled serves each
call made again as a replay makes it. Not here: the values' codec (``codec``) or the replay itself
(``compile_course.testing.replay``).
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any

import torch
from torch._dynamo.testing import CompileCounterWithBackend

from ..diagnostics import collected_logs, guard_failures
from .codec import TENSOR_DTYPES, ReplyError, apply_marks, from_data, tensor_marks, to_data_safe_data

MAX_KEYWORD = 64
MAX_SPIED_CALLS = 1000
MAX_REASON = 200
CALL_KEYS = {"args", "kwargs", "grad_enabled", "stance"}
CHECKED_KEYS = CALL_KEYS | {"served", "reason"}
GUARD_ENTRY = re.compile(r"^-\s*\d+/\d+:\s*")   # the ``- 0/1: `` before a guard failure in torch's recompiles log


class Spy:
    """Records how a function was called (as data) through :attr:`stand_in`, which calls it compiled.

    What it records for a tensor argument: dtype, shape, requires_grad and the dynamic-shape
    marks (``mark_dynamic`` and the others), plus the grad mode and stance of the call. A test can
    replay the record on its own function (``reference.compile``) to see what those calls would compile.

    The stand-in calls ``torch.compile(fn)`` (backend ``"eager"``, with a counter), as a caller handing
    over a compiled function would: what the calls compile is real. :meth:`records` is the record,
    checked against that reality once the function under test has returned: each call, made again on
    the same compiled function as a replay makes it (new values, a plain tensor, the grad mode it
    had, torch's global state as it was when the spy was made), must compile nothing. A call made with
    a tensor subclass (``nn.Parameter``), under autocast or another global state Dynamo guards on, or
    followed by ``torch.compiler.reset()``, is not served so: a replay would not reproduce it.

    The function under test is given :attr:`stand_in`, a plain closure: it holds no attribute
    that leads to the record, the counter or the real function (the record is the test's, not the student's).
    """

    def __init__(self, fn=None):
        calls: list = []
        self.calls = calls
        self._before = _global_state()
        self._counter = CompileCounterWithBackend("eager")
        compiled = None if fn is None else torch.compile(fn, backend=self._counter)
        self._compiled = compiled

        def stand_in(*args, **kwargs):
            if len(calls) < MAX_SPIED_CALLS:
                calls.append({"args": [describe_arg(a) for a in args], "grad_enabled": torch.is_grad_enabled(),
                              "stance": _current_stance(),
                              "kwargs": {str(k)[:MAX_KEYWORD]: describe_arg(v) for k, v in kwargs.items()}})
            return compiled(*args, **kwargs) if compiled is not None else None

        stand_in.__name__ = stand_in.__qualname__ = getattr(fn, "__name__", "spied")
        self.stand_in = stand_in

    def __call__(self, *args, **kwargs):
        return self.stand_in(*args, **kwargs)

    def records(self) -> list[dict]:
        """The recorded calls, each with ``served`` (made again now, it compiles nothing) and ``reason``
        (torch's, when it does). Ask once the function under test has returned: what it did after its
        calls counts too. The check stops at the first call not served (what that one compiles would
        serve the next ones)."""
        out = [dict(c, served=True, reason="") for c in self.calls]
        if self._compiled is None or not out:
            return out
        with _as_before(self._before) as changed:
            if changed:
                out[0].update(served=False, reason=f"torch's global state is not as it was ({changed})")
                return out
            for i, record in enumerate(out):
                try:
                    call = _read_call(record, i + 1)
                except ReplyError:
                    return out   # refused by read_spy_calls anyway, with its own reason
                reason = self._compiles_again(call, i)
                if reason is not None:
                    record.update(served=False, reason=reason)
                    return out
        return out

    def _compiles_again(self, call: dict, seed: int) -> str | None:
        before = self._counter.frame_count
        with collected_logs("recompiles") as logs, torch.set_grad_enabled(call["grad_enabled"]):
            try:
                args, kwargs, _ = make_spied_call(call, seed)
                self._compiled(*args, **kwargs)
            except Exception:  # noqa: BLE001 - what it compiled before raising is counted all the same
                pass
        if self._counter.frame_count == before:
            return None
        failed = guard_failures(logs["recompiles"])
        why = GUARD_ENTRY.sub("", failed[0]) if failed else "nothing the calls compiled is cached any more"
        return " ".join(why.split())[:MAX_REASON]


def _global_state() -> tuple:
    """What of torch's global state a compiled graph is guarded on (torch's own ``GlobalStateGuard``),
    with the settings a function under test can change, to put back: see :func:`_as_before`."""
    settings = (torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(), torch.get_num_threads(),
                torch.get_float32_matmul_precision(), torch.is_autocast_enabled("cpu"))
    return settings, torch.is_grad_enabled(), torch._C._dynamo.guards.GlobalStateGuard()


def _apply(settings: tuple) -> None:
    dtype, deterministic, warn_only, threads, precision, autocast = settings
    torch.set_default_dtype(dtype)
    torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision(precision)
    torch.set_autocast_enabled("cpu", autocast)


@contextlib.contextmanager
def _as_before(before: tuple):
    """Torch's global state as ``before`` held it, under the default stance, for the block (put back after).
    Yields None, or torch's word for what still differs (a setting not put back here)."""
    settings, grad, guard = before
    now = _global_state()[0]
    _apply(settings)
    try:
        with torch.compiler.set_stance("default"), torch.set_grad_enabled(grad):
            yield None if guard.check() else (guard.reason().strip() or "global state")
    finally:
        _apply(now)


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
    """Spy records (:meth:`Spy.records`) as data, validated: ``[{"args", "kwargs", "grad_enabled"}]``.

    A replay remakes each call on CPU, contiguous, under the default stance, with the same
    keywords (torch decides whether a keyword call's graph serves positional calls; the replay
    asks it): a record of anything else (a ``meta`` tensor, a call under ``force_eager``) cannot
    be replayed faithfully, so it is refused with a message saying which. So is a record whose
    calls, made again where they were made, were not served by what they compiled (``served``)."""
    if type(data) is not list or len(data) > MAX_SPIED_CALLS:
        raise ReplyError("the recorded calls are malformed")
    out = []
    for n, call in enumerate(data, 1):
        if type(call) is not dict or set(call) != CHECKED_KEYS or type(call["served"]) is not bool \
                or type(call["reason"]) is not str or len(call["reason"]) > MAX_REASON:
            raise ReplyError("a recorded call is malformed")
        read = _read_call(call, n)
        if not call["served"]:
            raise ReplyError(f"call {n}, made again once the function had returned (new values, a plain tensor, "
                             "its grad mode, torch's global state as before), compiles again: what the calls "
                             f"compiled does not serve it ({' '.join(call['reason'].split())}). A tensor subclass "
                             "(nn.Parameter), autocast or another global state Dynamo guards on, or "
                             "torch.compiler.reset() after the calls: a replay would not reproduce them")
        out.append(read)
    return out


def _read_call(call: dict, n: int) -> dict:
    """One recorded call, validated and read (its ``served`` check apart)."""
    if not CALL_KEYS <= set(call) or type(call["grad_enabled"]) is not bool or type(call["args"]) is not list \
            or len(call["args"]) > 16 or type(call["kwargs"]) is not dict or len(call["kwargs"]) > 16 \
            or not all(type(k) is str and k.isidentifier() and not k.startswith("_") for k in call["kwargs"]):
        raise ReplyError("a recorded call is malformed")
    if call["stance"] != "default":
        raise ReplyError(f"call {n} was made under torch.compiler.set_stance({str(call['stance'])[:20]!r}): "
                         "a warm-up under another stance compiles nothing that serving would use")
    args = [_read_spied_arg(a, n) for a in call["args"]]
    kwargs = {k: _read_spied_arg(a, n) for k, a in call["kwargs"].items()}
    return {"args": args, "kwargs": kwargs, "grad_enabled": call["grad_enabled"]}


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
