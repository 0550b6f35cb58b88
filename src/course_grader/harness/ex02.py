"""ex02 in the measuring process: what torch itself reports for the exercise's functions.

Only instructor code runs here (a copy of the locked cells' functions and call
sequences): no student code. Entry ``diagnose(payload)`` replies, per function,
the graph-break ids torch's ``graph_breaks`` log names under a default
``torch.compile`` and what ``fullgraph=True`` does; per call sequence, the frames
a ``CompileCounter`` counted and the guard failures of the ``recompiles`` log.
The trusted side turns that into the answer key.
"""

from __future__ import annotations

import contextlib
import logging
import re

import torch
from torch import nn
from torch._dynamo.testing import CompileCounter

from .common import error_text, fresh_compiler, guard_failures, restore_global_state, torch_log

GB_ID = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)
MAX_LINES = 40

# ----------------------------------------------------------- part 1 (a copy of the locked cell)
log = logging.getLogger("course.ex02")


def scale_and_report(x):
    print("scaling a tensor")
    return x * 2


def scale_by_total(x):
    return x * x.sum().item()


def flip_if_negative(x):
    if x.sum() < 0:
        return -x
    return x


def clipped(x):
    return torch.where(x > 1, torch.ones_like(x), x)


def logged_scale(x):
    log.info("scaling")
    return x * 3


FUNCTIONS = {f.__name__: f for f in (scale_and_report, scale_by_total, flip_if_negative, clipped, logged_scale)}


def example() -> torch.Tensor:
    return torch.tensor([1.0, -2.0, 3.0, 0.5])


# ----------------------------------------------------------- part 2 (a copy of the locked cell)
def make_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))


def double(x):
    return x * 2


def seq_a(call, net):
    call(torch.randn(4)); call(torch.randn(4))


def seq_b(call, net):
    call(torch.randn(4)); call(torch.randn(4, dtype=torch.float64))


def seq_c(call, net):
    call(torch.randn(4)); call(torch.randn(4, requires_grad=True))


def seq_d(call, net):
    net.train(); call(torch.randn(2, 4))
    net.eval(); call(torch.randn(2, 4))


def seq_e(call, net):
    call(torch.randn(4)); call(torch.randn(7))


def seq_f(call, net):
    net.eval(); call(torch.randn(2, 4)); call(torch.randn(2, 4))


SEQUENCES = {"seq_a": (seq_a, "double"), "seq_b": (seq_b, "double"), "seq_c": (seq_c, "double"),
             "seq_d": (seq_d, "net"), "seq_e": (seq_e, "double"), "seq_f": (seq_f, "net")}


def _breaks() -> dict:
    out = {}
    for name, fn in FUNCTIONS.items():
        fresh_compiler()
        with torch_log("graph_breaks") as messages, contextlib.redirect_stdout(None):
            torch.compile(fn, backend="eager")(example())
        logged = [{"gb": (GB_ID.search(m).group(1).upper() if GB_ID.search(m) else "-"),
                   "text": "\n".join(m.splitlines()[:MAX_LINES])} for m in messages]
        fresh_compiler()
        try:
            with contextlib.redirect_stdout(None):
                torch.compile(fn, backend="eager", fullgraph=True)(example())
            fullgraph = None
        except Exception as exc:  # noqa: BLE001 - the exception is the data
            match = GB_ID.search(str(exc))
            fullgraph = {"error": error_text(exc), "gb": match.group(1).upper() if match else "-"}
        out[name] = {"logged": logged, "fullgraph": fullgraph}
    return out


def _recompiles() -> dict:
    out = {}
    for name, (run, target) in SEQUENCES.items():
        fresh_compiler()
        net = make_net()
        counter = CompileCounter()
        compiled = torch.compile(net if target == "net" else double, backend=counter)
        torch.manual_seed(1)
        with torch_log("recompiles") as messages:
            run(compiled, net)
        out[name] = {"frames": counter.frame_count,
                     "guard_failures": guard_failures(messages)[:MAX_LINES]}
    return out


def diagnose(payload: dict) -> dict:
    restore_global_state()
    return {"breaks": _breaks(), "recompiles": _recompiles()}
