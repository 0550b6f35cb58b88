"""A real JupyterHub with its real proxy (configurable-http-proxy from npm) on 127.0.0.1, for tests.

:func:`running_hub` starts ``jupyterhub -f hub/jupyterhub_config.py`` (the course's one config file) in a
temporary state folder, on four ports from ``port`` (public/proxy, proxy API, hub, exchange; free ones
picked when none is given), with a
set-up service ``course-admin`` whose token creates users, groups and user tokens through the hub's
REST API. It waits until the hub and the exchange answer through the proxy, and stops everything it
started when the block ends (the hub stops its proxy and services; anything left is ended by pid).

:func:`hub_fixture` makes a module-scoped pytest fixture of it; :func:`skip_reason` says why a hub cannot
run here (no node, no configurable-http-proxy: ``npm ci --prefix hub`` installs it).

    from hubtools import hub_fixture
    hub = hub_fixture()                           # in a conftest.py or test module: free ports

    def test_x(hub):
        hub.add_user("ex-alice"); hub.add_group("course-c1-students", ["ex-alice"])
        token = hub.token("ex-alice")
        requests.get(hub.exchange_url + "api/me", headers={"Authorization": f"token {token}"})

Signature kept stable for the hub's own tests: ``running_hub(state, *, port=None, env=None,
demo=True, timeout=420)``, ``Hub.url/.api_url/.exchange_url/.state/.admin_token/.log``, ``Hub.api()``,
``add_user``, ``add_group``, ``token``, ``log_text``, ``stop``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[1]
HUB_DIR = ROOT / "hub"
HUB_CONFIG = HUB_DIR / "jupyterhub_config.py"
JUPYTERHUB = Path(sys.executable).parent / "jupyterhub"
START_TIMEOUT_S = 420.0       # a hub and its service start in 25-60 s on 2 busy cores; generous, never asserted
STOP_TIMEOUT_S = 60.0


def free_ports(count: int = 4, tries: int = 200) -> int:
    """The first of ``count`` consecutive ports free on 127.0.0.1 now, below the kernel's ephemeral range, so
    that hubs of parallel test workers, other people's tests and a hand-run hub never meet.

    Not a port the system hands out (bind to 0): those come from the ephemeral range, where every outgoing
    connection and every server bound to port 0 (a student's server, a kernel) also takes its port, so a
    port found free there can be taken again before the hub's services bind it (seen: the exchange's
    "Address already in use" while the other test worker was busy)."""
    import random
    import socket

    low = _ephemeral_low()
    for _ in range(tries):
        base = random.randrange(10000, low - count)
        try:
            with contextlib.ExitStack() as held:
                for p in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports on 127.0.0.1 after {tries} tries")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768 when it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def chp_command() -> str | None:
    local = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(local) if local.exists() else shutil.which("configurable-http-proxy")


def skip_reason() -> str:
    """"" when a real hub can start here, else why not (the fix included)."""
    if not JUPYTERHUB.exists():
        return f"no jupyterhub in this venv ({JUPYTERHUB}); make .venv/.installed"
    if shutil.which("node") is None:
        return "no node: configurable-http-proxy (the hub's proxy) needs Node.js (apt-get install nodejs npm)"
    if chp_command() is None:
        return ("no configurable-http-proxy: install it with `npm ci --prefix hub` "
                "(hub/package-lock.json pins it)" + ("" if shutil.which("npm") else "; npm is missing too"))
    return ""


class Hub:
    """A running hub: its addresses, the set-up token, and helpers for its REST API."""

    def __init__(self, state: Path, port: int, admin_token: str, process: subprocess.Popen, log: Path,
                 storage: Path | None = None, service_user: str | None = None):
        self.state, self.port, self.admin_token, self.process, self.log = state, port, admin_token, process, log
        self.storage = storage or state / "exchange"         # the exchange's storage folder
        self.service_user = service_user                     # the Unix user the exchange runs as (None: the hub's)
        self.url = f"http://127.0.0.1:{port}/"
        self.api_url = f"{self.url}hub/api"
        self.exchange_url = f"{self.url}services/course-exchange/"
        self.exchange_direct_url = f"http://127.0.0.1:{port + 3}/services/course-exchange/"

    def api(self, method: str, path: str, *, token: str | None = None, json=None, ok=(200, 201, 204)):
        """One call of the hub's REST API (``path`` after /hub/api), as the set-up service by default."""
        r = requests.request(method, f"{self.api_url}/{path.lstrip('/')}", json=json, timeout=60,
                             headers={"Authorization": f"token {token or self.admin_token}"})
        if r.status_code not in ok:
            raise AssertionError(f"hub API {method} {path}: {r.status_code} {r.text[:500]}")
        return r.json() if r.content else None

    def add_user(self, name: str, *, admin: bool = False) -> None:
        self.api("POST", f"users/{name}", json={"admin": admin}, ok=(201, 409))

    def add_group(self, name: str, users: list[str] | tuple[str, ...] = ()) -> None:
        """Create group ``name`` if needed and add ``users`` (created first when missing)."""
        for u in users:
            self.add_user(u)
        self.api("POST", f"groups/{name}", ok=(201, 409))
        if users:
            self.api("POST", f"groups/{name}/users", json={"users": list(users)})

    def remove_from_group(self, name: str, users: list[str]) -> None:
        self.api("DELETE", f"groups/{name}/users", json={"users": list(users)})

    def token(self, user: str, *, note: str = "test", scopes: list[str] | None = None) -> str:
        """A new API token of ``user`` (all the user's own scopes unless ``scopes`` says fewer)."""
        body = {"note": note, **({"scopes": scopes} if scopes is not None else {})}
        return self.api("POST", f"users/{user}/tokens", json=body)["token"]

    def service_pid(self) -> int:
        """The pid of this hub's exchange service."""
        for pid in _leftovers(self.state, self.storage):
            with contextlib.suppress(OSError):
                if b"course_exchange.service" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
        raise AssertionError(f"no exchange process of the hub in {self.state}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        """Stop the hub (it stops its proxy and services), then end by pid anything of this hub left."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        for pid in _leftovers(self.state, self.storage):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _leftovers(state: Path, storage: Path | None = None) -> list[int]:
    """Pids of processes started for the hub in ``state`` (their environment names it, or the exchange's
    ``storage``) still running."""
    markers = {f"COURSE_HUB_STATE={state}".encode(), f"COURSE_EXCHANGE_DIR={storage or state / 'exchange'}".encode()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if markers & set((entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:
            continue
    pid_file = state / "configurable-http-proxy.pid"
    if pid_file.exists():
        with contextlib.suppress(ValueError, OSError):
            pid = int(pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline")
            if cmdline.exists() and b"configurable-http-proxy" in cmdline.read_bytes():
                found.append(pid)
    return sorted(set(found))


def _log_for_a_person(hub: Hub) -> str:
    """The log's last traceback (a service that failed to start says why there), else its tail."""
    text = hub.log_text()
    at = text.rfind("Traceback")
    return text[max(0, at - 500):][:6000] if at >= 0 else text[-4000:]


def _wait_ready(hub: Hub, deadline: float) -> None:
    """Until the hub's API and the exchange (through the proxy) answer; raise with the log's tail if not."""
    checks = [(f"{hub.api_url}/", (200,)), (f"{hub.exchange_url}api/me", (401,))]
    for url, codes in checks:
        while True:
            if hub.process.poll() is not None:
                raise RuntimeError(f"the hub exited ({hub.process.returncode}):\n{_log_for_a_person(hub)}")
            try:
                if requests.get(url, timeout=10).status_code in codes:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the hub did not answer {url} with {codes} in time:\n{_log_for_a_person(hub)}")
            time.sleep(0.5)


@contextlib.contextmanager
def running_hub(state: Path, *, port: int | None = None, env: dict[str, str] | None = None, demo: bool = True,
                timeout: float = START_TIMEOUT_S) -> Iterator[Hub]:
    """See :func:`_running_hub`; as root, the exchange runs as a Unix user made for this hub (``hub-x``
    and the port), as the hub's config does with its ``course-exchange`` user, unless ``env`` names one."""
    port = port or free_ports(4)
    env = dict(env or {})
    with contextlib.ExitStack() as stack:
        if os.geteuid() == 0 and "COURSE_EXCHANGE_USER" not in env:
            import unix_users

            if unix_users.why_not():
                env["COURSE_EXCHANGE_USER"] = "root"
            else:
                name = f"hub-x{port}"
                user = stack.enter_context(unix_users.class_users([name]))[name]
                env.update(COURSE_EXCHANGE_USER=name, COURSE_EXCHANGE_DIR=str(user.home / "storage"))
        yield stack.enter_context(_running_hub(state, port=port, env=env, demo=demo, timeout=timeout))


@contextlib.contextmanager
def _running_hub(state: Path, *, port: int, env: dict[str, str], demo: bool, timeout: float) -> Iterator[Hub]:
    """A hub from hub/jupyterhub_config.py with state in ``state`` on ports ``port`` .. ``port + 3``
    (default: four free ones, :func:`free_ports`).

    ``demo`` (default): the config's demo section (any user name; servers as this process's user), enough
    for API-level tests; ``demo=False`` keeps the config's own authenticator and spawner. ``env`` adds or
    overrides variables of the hub's environment (the config reads its settings there)."""
    if reason := skip_reason():
        pytest.skip(reason)
    state = Path(state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(32)
    hub_env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    hub_env.update({"COURSE_HUB_STATE": str(state), "COURSE_HUB_PORT": str(port), "COURSE_HUB_ADMIN_TOKEN": token,
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{hub_env.get('PATH', '')}"})
    if demo:
        hub_env["COURSE_HUB_DEMO"] = "1"
    hub_env.update(env or {})
    log = state / "hub.log"
    with open(log, "ab") as out:
        process = subprocess.Popen([str(JUPYTERHUB), "-f", str(HUB_CONFIG)], cwd=state, env=hub_env,
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    storage = Path(hub_env["COURSE_EXCHANGE_DIR"]) if hub_env.get("COURSE_EXCHANGE_DIR") else None
    service_user = hub_env.get("COURSE_EXCHANGE_USER") if hub_env.get("COURSE_EXCHANGE_USER") != "root" else None
    hub = Hub(state, port, token, process, log, storage, service_user)
    try:
        _wait_ready(hub, time.monotonic() + timeout)
        yield hub
    finally:
        hub.stop()


def hub_fixture(*, port: int | None = None, scope: str = "module", **kwargs):
    """A pytest fixture (module-scoped by default) yielding a :class:`Hub` on ports ``port`` .. ``port + 3``
    (default: free ones)."""

    @pytest.fixture(scope=scope)
    def hub():
        with tempfile.TemporaryDirectory(prefix="course-hub-") as tmp:
            with running_hub(Path(tmp) / "state", port=port, **kwargs) as h:
                yield h

    return hub
