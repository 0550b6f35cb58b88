"""Re-execute notebooks in a fresh kernel and store their normalized outputs.

This is the only code path that writes stored outputs (``make outputs``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .normalize import normalize_notebook

CELL_TIMEOUT_S = 900
# the clients executing now, so that Ctrl-C can stop their kernels (stop_kernels)
_running: set[NotebookClient] = set()
_running_lock = threading.Lock()


def stop_kernels() -> int:
    """Kill the kernel of every notebook being executed; how many. For Ctrl-C: jupyter_client starts each
    kernel in a session of its own, so the terminal's SIGINT never reaches it, and the thread waiting for
    its cell would keep the command alive until the cell ends. A killed kernel ends that wait at once."""
    with _running_lock:
        clients = list(_running)
    stopped = 0
    for client in clients:
        process = getattr(getattr(getattr(client, "km", None), "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()
            stopped += 1
    return stopped


def execute_notebook(path: Path, write_to: Path | None = None, allow_errors: bool = False,
                     kernel_name: str = "python3"):
    """Execute ``path`` top to bottom; write the normalized result to ``write_to``.

    ``write_to`` defaults to ``path`` itself (store outputs in place). ``kernel_name``: ``course run``
    gives the warm spec (``course_tools.warm_kernels``), as the tests' nbval does.
    Returns ``(notebook, seconds)``. Cells tagged ``raises-exception`` may raise.
    """
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=kernel_name,
        allow_errors=allow_errors,
        record_timing=False,
        # The kernel listens on localhost only; its TCP-without-encryption notice is noise here.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    start = time.perf_counter()
    with _running_lock:
        _running.add(client)
    try:
        client.execute()
    finally:
        with _running_lock:
            _running.discard(client)
    seconds = time.perf_counter() - start
    normalize_notebook(nb)
    target = Path(write_to) if write_to else path
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return nb, seconds
