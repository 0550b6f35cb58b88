"""The fork-server core: import the course's torch stack once, then fork a child that starts warm.

Two servers fork from a process that has already imported torch: the grader's sandbox template
(``sandbox/template.py``, one confined run per request) and the course's warm Jupyter kernels
(``course_tools/warm_kernels/server.py``, one IPython kernel per request). A fresh interpreter
spends seconds of CPU importing torch, dynamo and inductor, and its first compile hashes torch's
and triton's sources for inductor's cache key; a fork of a process that did both starts at once.
What the two share is here, once:

- ``PRELOAD`` and ``preload``: what a student's or a lesson's kernel imports, and the cache keys;
  each server adds the few modules only its children use.
- ``ignore_children`` and ``fork_child``: the server lets the system reap its children; a child
  gets the default SIGCHLD back (it waits for its own), dies with the server, and closes the
  server's sockets.

What stays in each server, because it differs: how a request arrives and what answers it (the
template: a ``Spawn`` message with three descriptors on a socket pair, answered by the run itself;
the warm kernels: a JSON line on a new connection to a listening socket, answered with the pid), when
the server ends (its socket's EOF, its stdin's EOF), how it keeps forking safe (the template pins
the thread pools to one thread and reports its thread count; the warm template refuses to fork while
a second Python thread runs), and what the child becomes (a confined reaper; a Jupyter kernel).
This module imports nothing of the grader: a lesson's kernel carries it, and so does every run.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import signal
from collections.abc import Iterable
from typing import Protocol

# The course's package first: it sets the log policy (``compile_course.quiet``) before torch is
# imported, as a notebook's first cell does (torch logs a CPU-only notice while it is imported).
PRELOAD = ["compile_course", "torch", "torch._dynamo", "torch._dynamo.testing",
           "torch._inductor.compile_fx", "torch._inductor.codecache", "functorch.compile",
           "compile_course.checks", "compile_course.testing"]
PR_SET_PDEATHSIG = 1
EXIT_ORPHANED = 1        # a child whose server died before the child could ask to die with it


class Closable(Protocol):
    def close(self) -> None: ...


def import_present(names: Iterable[str]) -> list[str]:
    """Import each module of ``names``; return the ones this installation does not have.

    A missing module is skipped (a helper the course does not have, an optional package); a module
    that is there but fails to import raises, as it would in the child.
    """
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise
            missing.append(name)
    return missing


def preload(extra: Iterable[str] = ()) -> list[str]:
    """Import ``PRELOAD``, then ``extra``, and compute inductor's cache keys; return what was missing."""
    missing = import_present([*PRELOAD, *extra])
    # The helpers through the package's lazy exports, as `from compile_course import ...` loads them:
    # importing a submodule directly would bind the module `torch_logs` where the package exports
    # the function of that name.
    import compile_course

    for name in compile_course.__all__:
        getattr(compile_course, name)
    try:
        # Hashes of torch's and triton's own sources that every process's first inductor compile
        # computes and keeps (~2 s together): computed once here. Pure file reading, no threads.
        from torch._inductor.codecache import torch_key, triton_key

        torch_key()
        triton_key()
    except Exception:  # noqa: BLE001, S110 - an optimisation only
        pass
    return missing


def ignore_children() -> None:
    """The server's side: it never waits for a child, the system reaps each one as it ends."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def die_with_parent(parent: int) -> None:
    """SIGKILL when ``parent`` ends; exit now if it already has (it died before the request was made)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(EXIT_ORPHANED)


def fork_child(*server_sockets: Closable) -> int:
    """Fork. Return the child's pid in the server, and 0 in the child, which by then has the default
    SIGCHLD again (it waits for its own children), dies with the server and has closed
    ``server_sockets`` (the server's, not the child's)."""
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent(server)
    for sock in server_sockets:
        sock.close()
    return 0
