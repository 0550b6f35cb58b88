"""ex04 in the measuring process: the student's fixture judges candidates it cannot recognise.

Entry ``judge(payload)``: ``payload = {"source": allow-listed fixture source, "candidates": [names]}``.
For each name the harness builds the reference and a fresh candidate (faithful or
faulty, compiled or not: the mix is the point), wraps it so every candidate looks
the same from the outside (a plain function named ``candidate``, or a ``Candidate``
module holding a ``Block``), and calls ``check_equivalent(reference, candidate)``
on a fresh load of the fixture. The calls are made in a random order. Replies
``{name: {"result": true|false|null, "error": text|null}}``; only an exact ``bool``
counts as a result. Which answer is right is known only to the trusted side.
"""

from __future__ import annotations

import copy
import random

import torch
from torch import nn

from compile_course.comparison import Case, compare

from .allowlist import SAFE_BUILTINS, AllowList, load_checked
from .common import error_text, fresh_compiler, restore_global_state

FIXTURE = "check_equivalent"
# hasattr answers only True/False, and every candidate is wrapped the same way, so it reveals
# nothing about which candidate is which; getattr (which fetches values) stays forbidden.
ALLOWED = AllowList(provided=frozenset({"torch", "nn", "Case", "compare", "copy"}),
                    builtins=SAFE_BUILTINS | {"hasattr"})


# ----------------------------------------------------------- references (copies of the locked cell)
def gate(x):
    return torch.where(x > 0, x * x, -0.5 * x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.norm = nn.BatchNorm1d(4)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.drop(torch.relu(self.norm(self.linear(x))))


def make_block(seed=0):
    torch.manual_seed(seed)
    return Block()


# ----------------------------------------------------------- transformations of gate
def gate_rewritten(x):             # faithful: the same arithmetic, written differently
    return torch.where(x > 0, x.square(), x * -0.5)


def relu_instead(x):
    return torch.relu(x)


def dropped_branch(x):
    return x * x


def boundary_at_zero(x):
    return torch.where(x >= 0, x * x, -0.5 * x)


def nan_scrubbed(x):
    return gate(torch.nan_to_num(x))


def detached_square(x):
    return torch.where(x > 0, x * x.detach(), -0.5 * x)


def float32_inside(x):
    return gate(x.float())


def float64_fast_path(x):
    if x.dtype == torch.float64:
        return torch.where(x > 0, x * x, 0.5 * x)
    return gate(x)


def first_block_only(x):
    return torch.cat([gate(x[:8]), -0.5 * x[8:]])


def pairwise_rows(x):
    n = x.shape[0] - x.shape[0] % 2
    return torch.cat([gate(x[:n]), x[n:]])


def _compiled(fn):
    return torch.compile(fn, backend="eager")


# ----------------------------------------------------------- uniform wrappers
def _function_candidate(impl):
    def candidate(x):
        return impl(x)
    return candidate


class Candidate(nn.Module):
    """Every module candidate: the same class, the same child, the same repr."""

    def __init__(self, inner: nn.Module, forward_impl) -> None:
        super().__init__()
        self.inner = inner
        self._impl = [forward_impl]   # a list, so it is not registered as a child module

    def forward(self, x):
        return self._impl[0](x)


def _module_candidate(kind: str) -> nn.Module:
    inner = make_block()
    if kind == "compiled":
        impl = _compiled(inner)
    elif kind == "plain":
        impl = inner
    elif kind == "forced_eval":
        def impl(x):
            inner.eval()
            return inner(x)
    else:
        raise ValueError(kind)
    return Candidate(inner, impl)


FUNCTION_CANDIDATES = {
    "gate compiled": lambda: _compiled(gate),
    "gate rewritten": lambda: gate_rewritten,
    "gate rewritten, compiled": lambda: _compiled(gate_rewritten),
    "relu instead of gate": lambda: relu_instead,
    "dropped branch, compiled": lambda: _compiled(dropped_branch),
    "boundary at zero": lambda: boundary_at_zero,
    "NaN scrubbed, compiled": lambda: _compiled(nan_scrubbed),
    "detached square, compiled": lambda: _compiled(detached_square),
    "float32 inside": lambda: float32_inside,
    "float64 fast path, compiled": lambda: _compiled(float64_fast_path),
    "first block only, compiled": lambda: _compiled(first_block_only),
    "pairwise rows": lambda: pairwise_rows,
}
MODULE_CANDIDATES = {"block compiled": "compiled", "block plain": "plain", "block forced eval": "forced_eval",
                     "block forced eval, compiled": "forced_eval_compiled"}


def build(name: str):
    """``(reference, candidate)`` for one candidate name, both fresh."""
    if name in FUNCTION_CANDIDATES:
        return gate, _function_candidate(FUNCTION_CANDIDATES[name]())
    kind = MODULE_CANDIDATES[name]
    if kind == "forced_eval_compiled":
        candidate = _module_candidate("forced_eval")
        candidate._impl[0] = _compiled(candidate._impl[0])
        return make_block(), candidate
    return make_block(), _module_candidate(kind)


def judge(payload: dict) -> dict:
    names = [n for n in payload["candidates"] if n in FUNCTION_CANDIDATES or n in MODULE_CANDIDATES]
    namespace = {"torch": torch, "nn": nn, "Case": Case, "compare": compare, "copy": copy}
    try:
        load_checked(payload["source"], FIXTURE, ALLOWED, namespace)
    except Exception as exc:  # noqa: BLE001
        return {"load_error": error_text(exc), "results": {}}
    order = list(names)
    random.SystemRandom().shuffle(order)  # a fixture that counts its calls learns nothing
    results = {}
    for name in order:
        restore_global_state()
        fresh_compiler()
        fixture = load_checked(payload["source"], FIXTURE, ALLOWED, namespace)  # fresh constants each call
        reference, candidate = build(name)
        try:
            answer = fixture(reference, candidate)
            results[name] = {"result": answer if type(answer) is bool else None,
                             "error": None if type(answer) is bool else f"returned {type(answer).__name__}, not a bool"}
        except Exception as exc:  # noqa: BLE001
            results[name] = {"result": None, "error": error_text(exc)}
    return {"load_error": None, "results": results}
