"""Start a real Jupyter server from this venv for a test, and stop it by its own pid.

Shared by test_jupyter_server.py and test_lab_roundtrip.py. The server gets a
free port, a random token, and its own runtime, config and data folders, so it
neither reads nor writes the user's Jupyter state.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import requests

STARTUP_TIMEOUT_S = 120
SHUTDOWN_TIMEOUT_S = 20
OPTIONAL_EXTENSIONS = ("jupyterlab", "jupyter_lsp", "jupyter_server_terminals", "notebook_shim")


@dataclass
class Server:
    url: str
    token: str
    pid: int
    log: Path

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"token {self.token}"}
        response = requests.request(method, f"{self.url}{path}", headers=headers, timeout=60, **kwargs)
        response.raise_for_status()
        return response


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def jupyter_server(root_dir: Path, state_dir: Path, *, app: str = "jupyter_server", extra_args=()):
    """Run ``python -m <app>`` serving ``root_dir``; yield a :class:`Server`.

    With the plain ``jupyter_server`` app, the Lab, LSP and terminal server
    extensions are switched off: the REST and kernel APIs do not need them and
    the server starts faster. ``app="jupyterlab"`` keeps them all.
    """
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    for name in ("runtime", "config", "data"):
        (state_dir / name).mkdir(parents=True, exist_ok=True)
    if app == "jupyter_server":
        (state_dir / "config" / "jupyter_server_config.json").write_text(json.dumps(
            {"ServerApp": {"jpserver_extensions": {name: False for name in OPTIONAL_EXTENSIONS}}}))
    env.update(JUPYTER_RUNTIME_DIR=str(state_dir / "runtime"), JUPYTER_CONFIG_DIR=str(state_dir / "config"),
               JUPYTERLAB_WORKSPACES_DIR=str(state_dir / "workspaces"),
               JUPYTERLAB_SETTINGS_DIR=str(state_dir / "lab-settings"), IPYTHONDIR=str(state_dir / "ipython"))
    env.pop("JUPYTER_TOKEN", None)
    log = state_dir / "server.log"
    command = [sys.executable, "-m", app, "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
               "--ServerApp.port_retries=0", *extra_args]
    if os.geteuid() == 0:  # CI containers run as root; the server refuses that unless told
        command.append("--allow-root")
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root_dir)
    server = Server(f"http://127.0.0.1:{port}", token, proc.pid, log)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the Jupyter server exited with {proc.returncode}:\n{log.read_text()}")
            try:
                server.api("GET", "/api/status")
                break
            except requests.RequestException as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no Jupyter server after {STARTUP_TIMEOUT_S} s:\n{log.read_text()}") from exc
                time.sleep(0.25)
        yield server
    finally:
        # The server's own shutdown stops its kernels; SIGTERM, then SIGKILL, go to its pid only.
        with contextlib.suppress(requests.RequestException):
            server.api("POST", "/api/shutdown")
        for stop in (lambda: None, proc.terminate, proc.kill):
            stop()
            try:
                proc.wait(SHUTDOWN_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                continue


class KernelSocket:
    """One kernel's channels through the server's websocket (Jupyter's JSON message protocol)."""

    def __init__(self, server: Server, kernel_id: str):
        import websocket  # websocket-client, a dependency of jupyter_server

        self.session = uuid.uuid4().hex
        url = server.url.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels?session_id={self.session}"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {server.token}"], timeout=60)

    def close(self) -> None:
        self.ws.close()

    def request(self, msg_type: str, content: dict, timeout: float = 120) -> tuple[dict, list[dict]]:
        """Send a shell request; return its reply and the iopub messages it caused, once the kernel is idle."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "test",
                       "version": "5.3", "date": datetime.datetime.now(datetime.UTC).isoformat()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": [],
        }))
        reply, iopub, idle = None, [], False
        deadline = time.monotonic() + timeout
        while reply is None or not idle:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no complete answer to {msg_type} in {timeout} s")
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["channel"] == "shell":
                reply = msg
            elif msg["channel"] == "iopub":
                if msg["msg_type"] == "status":
                    idle = msg["content"]["execution_state"] == "idle"
                else:
                    iopub.append(msg)
        return reply, iopub

    def execute(self, code: str, timeout: float = 300) -> tuple[dict, str]:
        """Run ``code``; return the execute_reply content and everything it printed to stdout."""
        reply, iopub = self.request("execute_request", {
            "code": code, "silent": False, "store_history": False, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True}, timeout)
        stdout = "".join(m["content"]["text"] for m in iopub
                         if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
        return reply["content"], stdout


@contextlib.contextmanager
def kernel_for(server: Server, notebook_path: str):
    """Open a notebook session the way Lab does (POST /api/sessions) and yield its KernelSocket."""
    session = server.api("POST", "/api/sessions", json={
        "path": notebook_path, "name": Path(notebook_path).name, "type": "notebook", "kernel": {"name": "python3"},
    }).json()
    sock = KernelSocket(server, session["kernel"]["id"])
    try:
        yield sock
    finally:
        sock.close()
        with contextlib.suppress(requests.RequestException):
            server.api("DELETE", f"/api/sessions/{session['id']}")
