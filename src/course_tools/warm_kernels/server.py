"""The template process: import once, then fork one IPython kernel per request.

The template is ``python -m ipykernel_launcher`` itself, started with ``template_hook``
on PYTHONPATH and ``COURSE_WARM_TEMPLATE=SOCKET``: the hook's ``sitecustomize`` calls
``install``, so the launcher's own call to ``IPKernelApp.initialize`` serves instead.
Once it listens, it prints ``ready`` and what its imports changed in its environment
on stdout. It exits when its stdin closes (its owner is gone).
A request is one JSON line ``{"args": [...], "env": {...}, "cwd": "..."}`` on a new
connection; the reply is ``{"pid": N}`` or ``{"error": "..."}``.

A forked child gets only the forking thread, so a lock another Python thread held at
fork time (logging's, an import lock) would stay held forever in the kernel. The
template therefore refuses to fork while it runs any Python thread besides its main
one, and the provisioner then launches an ordinary kernel. The one native thread that
importing torch starts (the OpenMP pool, parked on a futex) is safe: libgomp builds a
new pool in the child, which ``tests/course_tools/test_warm_kernels.py`` checks.

The preload and the fork are ``course_grader.forkserver``'s, shared with the grader's sandbox
template. What is the warm kernels' alone stays here: requests as JSON lines on a listening
socket, answered with the pid; ending with the owner's stdin; the Python-thread check above;
and the child's hand-off to Jupyter (an ordinary kernel's environment, folder, arguments and stack).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import socket
import sys
import threading

from course_grader import forkserver

# Beyond what every kernel imports (forkserver.PRELOAD): what a lesson kernel itself runs on.
KERNEL_PRELOAD = ["matplotlib", "IPython", "ipykernel.kernelapp"]
REQUEST_BYTES = 1 << 20


def read_request(conn: socket.socket) -> dict:
    data = b""
    while not data.endswith(b"\n") and len(data) < REQUEST_BYTES:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return json.loads(data)


def become_kernel(request: dict, hook_dir: str, imported_env: tuple[dict, list]) -> list[str]:
    """In the forked child (``forkserver.fork_child``): take the kernel's environment, folder and
    arguments; return its argv.

    ``imported_env`` holds what the template's imports set in, and removed from, its environment
    (inductor's ``cache_dir()`` sets TORCHINDUCTOR_CACHE_DIR, for one): an ordinary kernel's
    environment changes the same way when its first cell imports the same modules.
    """
    os.setsid()                                      # its own process group, as jupyter_client launches one
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    set_by_imports, removed_by_imports = imported_env
    os.environ.update(set_by_imports)
    for key in removed_by_imports:
        os.environ.pop(key, None)
    if hook_dir in sys.path:
        sys.path.remove(hook_dir)
    if os.path.dirname(getattr(sys.modules.get("sitecustomize"), "__file__", "") or "") == hook_dir:
        sys.modules.pop("sitecustomize", None)   # the hook's own; the interpreter's (template_hook) stays
    sys.argv = [sys.argv[0], *request["args"]]
    return list(request["args"])


def remove_socket(path: str) -> None:
    """Remove the socket and, when nothing else is in it, its folder (the owner's temporary one).

    The owner removes them too when it closes the template; a killed owner never does.
    """
    for remove, target in ((os.unlink, path), (os.rmdir, os.path.dirname(path))):
        try:
            remove(target)
        except OSError:
            return


def serve(path: str, hook_dir: str) -> list[str]:
    """Preload, then fork a kernel per request. Returns only in a forked child (its argv).

    The template ends when its stdin reaches EOF, which happens however its owner process ends.
    (A parent-death signal would fire when the owner's launching *thread* ends, and jupyter_client
    may launch from a short-lived one.) Each kernel does get one: it dies with the template.
    """
    before = dict(os.environ)
    forkserver.preload(KERNEL_PRELOAD)
    imported_env = ({k: v for k, v in os.environ.items() if before.get(k) != v},
                    [k for k in before if k not in os.environ])
    forkserver.ignore_children()                          # forked kernels are reaped by the system
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ, "request")
    events.register(sys.stdin, selectors.EVENT_READ, "owner")
    print("ready", json.dumps({"set": imported_env[0], "removed": imported_env[1]}), flush=True)
    while True:
        for key, _ in events.select():
            if key.data == "owner" and not sys.stdin.buffer.read1(1):
                remove_socket(path)                       # stdin closed: the owner is gone,
                os._exit(0)                               # perhaps killed before it could clean up
            if key.data != "request":
                continue
            conn, _ = listener.accept()
            with conn:
                try:
                    request = read_request(conn)
                except (OSError, ValueError) as err:
                    conn.sendall(json.dumps({"error": f"bad request: {err}"}).encode() + b"\n")
                    continue
                if threading.active_count() != 1:
                    error = f"{threading.active_count()} Python threads; fork refused"
                    conn.sendall(json.dumps({"error": error}).encode() + b"\n")
                    continue
                pid = forkserver.fork_child(events, listener, conn)
                if pid == 0:
                    return become_kernel(request, hook_dir, imported_env)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def install(path: str, hook_dir: str) -> None:
    """Make this ``python -m ipykernel_launcher`` process the template (called from ``template_hook``).

    IPKernelApp.initialize becomes the serving loop; in each forked child it returns into the real
    initialize with that kernel's arguments, and ``app.start()`` follows as in any launch. The
    frames left on a kernel's stack are therefore an ordinary kernel's: runpy, ipykernel_launcher,
    traitlets' launch_instance, ... (torch prints them in graph-break tracebacks, which the stored
    outputs compare).
    """
    template = os.getpid()

    def skip_teardown() -> None:
        """A kernel's last exit step: after every atexit handler, skip the module teardown.

        Registered before anything is imported, so it runs after every other handler. The
        teardown of an interpreter holding torch takes about 1 s of CPU and does nothing a
        finished kernel needs (its outputs went out on iopub before it was asked to stop).
        """
        if os.getpid() != template:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001, S110 - a closed stream: nothing left to flush
                    pass
            os._exit(0)

    atexit.register(skip_teardown)
    from ipykernel.kernelapp import IPKernelApp

    original = IPKernelApp.initialize

    def initialize(self, argv=None):
        IPKernelApp.initialize = original
        return original(self, serve(path, hook_dir))

    IPKernelApp.initialize = initialize
