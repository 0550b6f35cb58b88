"""Show torch's own compiler logs in a notebook, exactly as torch prints them.

``with torch_logs(graph_breaks=True, recompiles=True): ...`` turns on those
``torch._logging`` artifacts for the block and sends what torch writes to
stderr to stdout instead, so a notebook can store it (stored stderr is not
allowed). Nothing is filtered or re-worded: graph-break ids, hints, links,
the ``#`` explanations of a recompile and guard dumps all appear as torch
wrote them. The volatile parts of torch's log prefix (date, time, pid, and
line numbers inside torch's own source) are replaced by the sanitize rules in
``course_tools/notebooks/nbval_sanitize.cfg`` when outputs are stored and compared.

What it does not do: it does not capture the text (use ``recompile_log`` for
that), and it does not touch loggers outside ``torch._logging`` except the
CUDA-runtime notice that ``quiet`` always keeps out of notebooks.
"""

from __future__ import annotations

import contextlib
import logging
import sys

import torch

from .quiet import NOISY_LOGGERS, set_quiet_logs

DEFAULT_ARTIFACTS = {"graph_breaks": True, "recompiles": True}


@contextlib.contextmanager
def torch_logs(**settings):
    """Inside the block: ``torch._logging.set_logs(**settings)``, torch's stderr on stdout.

    With no settings, graph breaks and recompiles are logged (what
    ``TORCH_LOGS="graph_breaks,recompiles"`` shows). Logger levels that are
    not named go back to torch's defaults inside the block, so torch's own
    warnings (for example about ``recompile_limit``) are shown too. On exit
    the course's quiet policy is restored.
    """
    try:
        # torch's console handler writes to the current sys.stderr, so redirecting is enough.
        with contextlib.redirect_stderr(sys.stdout):
            torch._logging.set_logs(**(settings or DEFAULT_ARTIFACTS))
            for name in NOISY_LOGGERS:
                logging.getLogger(name).setLevel(logging.CRITICAL)
            yield
            sys.stdout.flush()
    finally:
        set_quiet_logs()
