"""Re-execute notebooks in a fresh kernel and store their normalized outputs.

This is the only code path that writes stored outputs (``make outputs``).
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .normalize import normalize_notebook

CELL_TIMEOUT_S = 900


def execute_notebook(path: Path, write_to: Path | None = None, allow_errors: bool = False):
    """Execute ``path`` top to bottom; write the normalized result to ``write_to``.

    ``write_to`` defaults to ``path`` itself (store outputs in place).
    Returns ``(notebook, seconds)``. Cells tagged ``raises-exception`` may raise.
    """
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=allow_errors,
        record_timing=False,
        # The kernel listens on localhost only; its TCP-without-encryption notice is noise here.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    normalize_notebook(nb)
    target = Path(write_to) if write_to else path
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return nb, seconds
