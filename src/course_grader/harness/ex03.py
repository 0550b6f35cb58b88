"""ex03 in the measuring process: compile counts per call, and the student's warm-up.

Entry ``counts(payload)`` runs only instructor code (copies of the locked cells'
sequences) and replies the new frames a ``CompileCounter`` counted at each call,
with the recompiles log's guard failures. Entry ``warm_up(payload)`` runs the
student's allow-listed ``warm_up(compiled_h)``, then calls ``compiled_h`` under
``torch.compiler.set_stance("fail_on_recompile")`` for each batch size the
payload names, and replies the frame count and what each call did.
"""

from __future__ import annotations

import torch
from torch import nn
from torch._dynamo.testing import CompileCounter

from .allowlist import AllowList, load_checked
from .common import error_text, fresh_compiler, guard_failures, restore_global_state, torch_log

WARM_UP = "warm_up"
ALLOWED = AllowList(provided=frozenset({"torch"}), dotted=frozenset({"torch._dynamo.mark_dynamic"}))
FEATURES = 8


def h(x):
    return torch.nn.functional.gelu(x) * 2


def sequence_a(call):
    call(torch.randn(8))
    call(torch.randn(8))
    call(torch.randn(16))
    call(torch.randn(32))
    call(torch.randn(32, dtype=torch.float64))
    call(torch.randn(32, requires_grad=True))
    with torch.no_grad():
        call(torch.randn(32, requires_grad=True))
    call(torch.randn(1))


def make_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))


def sequence_b(call, net):
    x = torch.randn(4, 8)
    torch._dynamo.mark_dynamic(x, 0)
    net.train(); call(x)
    call(torch.randn(6, 8))
    net.eval(); call(torch.randn(6, 8))
    net.train(); call(torch.randn(10, 8))
    net.eval(); call(torch.randn(3, 8))
    with torch.no_grad():
        call(torch.randn(3, 8))


class _Recorder:
    """Calls a compiled target and records the new frames each call caused."""

    def __init__(self, target) -> None:
        self.counter = CompileCounter()
        self.compiled = torch.compile(target, backend=self.counter)
        self.new: list[int] = []

    def __call__(self, *args):
        before = self.counter.frame_count
        out = self.compiled(*args)
        self.new.append(self.counter.frame_count - before)
        return out


def counts(payload: dict) -> dict:
    out = {}
    restore_global_state()
    fresh_compiler()
    torch.manual_seed(0)
    with torch_log("recompiles") as messages:
        rec = _Recorder(h)
        sequence_a(rec)
    out["a"] = {"new": rec.new, "guard_failures": guard_failures(messages)[:40]}
    fresh_compiler()
    net = make_net()
    with torch_log("recompiles") as messages:
        rec = _Recorder(net)
        sequence_b(rec, net)
    out["b"] = {"new": rec.new, "guard_failures": guard_failures(messages)[:40]}
    return out


def warm_up(payload: dict) -> dict:
    try:
        fn = load_checked(payload["source"], WARM_UP, ALLOWED, {"torch": torch})
    except Exception as exc:  # noqa: BLE001
        return {"load_error": error_text(exc)}
    fresh_compiler()
    counter = CompileCounter()
    compiled_h = torch.compile(h, backend=counter)
    try:
        fn(compiled_h)
        error = None
    except Exception as exc:  # noqa: BLE001
        error = error_text(exc)
    frames = counter.frame_count
    restore_global_state()
    calls = {}
    for n in payload["batch_sizes"]:
        try:
            with torch.compiler.set_stance("fail_on_recompile"):
                compiled_h(torch.randn(n, FEATURES))
            calls[str(n)] = "ok"
        except Exception as exc:  # noqa: BLE001
            calls[str(n)] = error_text(exc)
    return {"load_error": None, "error": error, "frames": frames, "calls": calls}
