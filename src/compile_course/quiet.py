"""The course's stderr policy: torch's logs are off by default, and shown on purpose.

Dynamo logs graph-break warnings, and the CUDA build of torch logs
"No CUDA runtime is found" when inductor builds C++ on a CPU-only machine.
Both land on stderr, which may not appear in stored notebook outputs. So
outside a ``torch_logs(...)`` block the dynamo, aot and inductor loggers are
kept at ERROR; inside one, the lesson turns on the artifacts it teaches and
torch's lines go to stdout, unfiltered (see ``torch_logs``). The CUDA-runtime
notice is not a diagnostic and stays silenced everywhere.
"""

from __future__ import annotations

import contextlib
import logging

NOISY_LOGGERS = ("torch.utils.cpp_extension", "torch._inductor.cpp_builder", "torch._subclasses.fake_tensor")
# Set before torch is imported: the CPU-only warning is logged at import time.
for _name in NOISY_LOGGERS:
    logging.getLogger(_name).setLevel(logging.CRITICAL)


_QUIET = dict(dynamo=logging.ERROR, aot=logging.ERROR, inductor=logging.ERROR)


def set_quiet_logs(**extra) -> None:
    """Apply the policy (plus any extra ``torch._logging.set_logs`` settings)."""
    import torch

    torch._logging.set_logs(**_QUIET, **extra)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


@contextlib.contextmanager
def apply_log_policy(**extra):
    """Quiet logs inside the block, with ``extra`` artifacts (e.g. recompiles) on."""
    set_quiet_logs(**extra)
    try:
        yield
    finally:
        set_quiet_logs()
