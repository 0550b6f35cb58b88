"""Small pieces every harness uses: error text, upstream gradients, the compile-state reset."""

from __future__ import annotations

import contextlib
import logging
import re

import torch

from ..protocol import encode_tensor

MAX_ERROR_CHARS = 300
_PATHS = re.compile(r"(/[^\s:'\"]+)+")


def error_text(exc: BaseException) -> str:
    """``TypeName: first line`` without file paths, short: data for the trusted side, never executed."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {_PATHS.sub('<path>', first)}"[:MAX_ERROR_CHARS]


def upstream_gradient(out: torch.Tensor) -> torch.Tensor:
    """A fixed, non-uniform upstream gradient (1..2), so a permuted or sign-flipped gradient shows.

    The trusted side uses the same function for the reference.
    """
    n = max(out.numel(), 1)
    if not out.numel():
        return torch.ones_like(out)
    return torch.linspace(1.0, 2.0, n, dtype=out.dtype).reshape(out.shape)


def tensor_or_none(value) -> dict | None:
    return encode_tensor(value) if isinstance(value, torch.Tensor) else None


def fresh_compiler() -> None:
    """Empty Dynamo's caches so a count describes this run alone."""
    torch._dynamo.reset()


def restore_global_state() -> None:
    """Undo what student code may have switched globally (stance, grad mode, default dtype, seed).

    Each measure runs in a fresh process, so this only matters between the runs one
    harness call makes: an earlier run must not decide how a later one behaves.
    """
    torch.compiler.set_stance("default")
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def torch_log(artifact: str):
    """The messages of torch's ``artifact`` log (what ``TORCH_LOGS=<artifact>`` prints) inside the block.

    They are collected, not printed: torch's own handler does not see them.
    """
    handler = _Collect()
    torch._logging.set_logs(**{artifact: True})
    loggers = [logging.getLogger(n) for n in list(logging.Logger.manager.loggerDict) if n.endswith(f".__{artifact}")]
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
    try:
        yield handler.messages
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate
        torch._logging.set_logs()


GUARD_FAILURE = re.compile(r"^\s*- \d+/\d+: ")


def guard_failures(messages: list[str]) -> list[str]:
    """The guard-failure lines (``- 0/1: ...``) of recompiles-log messages."""
    return [line.strip() for m in messages for line in m.splitlines() if GUARD_FAILURE.match(line)]
