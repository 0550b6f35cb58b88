"""The first cell of every notebook: quiet logs, fixed seed, one compact version line."""

from __future__ import annotations

import re
import sys

import torch

from .paths import REQUIREMENTS
from .quiet import set_quiet_logs


def pinned_torch() -> str | None:
    """The torch version pinned in requirements.txt (the course's one list of pins)."""
    if not REQUIREMENTS.exists():
        return None
    match = re.search(r"^torch==(\S+)$", REQUIREMENTS.read_text(), re.MULTILINE)
    return match.group(1) if match else None


def version_line() -> str:
    """``torch 2.14.1 | python 3.11 | cpu``: no wheel-local tag (+cu130, +cpu), no CUDA fields."""
    installed = torch.__version__.split("+")[0]
    return f"torch {installed} | python {sys.version_info.major}.{sys.version_info.minor} | cpu"


def start(seed: int = 0) -> None:
    """Prepare a notebook: quiet torch's stderr logs, seed, print the version line.

    Torch's logs are kept off stderr because stored notebook outputs may not
    contain stderr; lessons show them with ``torch_logs(...)``, on stdout.
    """
    set_quiet_logs()
    torch.manual_seed(seed)
    pinned = pinned_torch()
    installed = torch.__version__.split("+")[0]
    print(version_line())
    if pinned and installed != pinned:
        print(f"WARNING: outputs were recorded with torch {pinned}; yours may differ.")
