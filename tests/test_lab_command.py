"""``course lab`` (``make lab``) as a student meets it: as root and as an ordinary user, in a real browser.

The command is started as students start it, with extra flags as ``LAB_ARGS`` would pass them.
The test reads the URL it prints, opens that URL in headless Chromium and checks that lesson 01
of the workspace is the document on screen, and that no "Jupyter news" notification is shown.
Each run gets its own Jupyter runtime, config and settings folders and its own workspace.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from lab_server import free_port
from ordinary_user import can_make_users, ordinary_user

ROOT = Path(__file__).resolve().parents[1]
COURSE = Path(sys.executable).with_name("course")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
URL = re.compile(r"(http://127\.0\.0\.1:\d+/\S+\?token=\w+)")
STARTUP_TIMEOUT_S = 120
NEWS_PROMPT = "Jupyter news"   # the notification JupyterLab shows unless fetchNews is set


def _state_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "COURSE_"))}
    env.update(HOME=str(home), JUPYTER_RUNTIME_DIR=str(home / "rt"), JUPYTER_CONFIG_DIR=str(home / "cfg"),
               JUPYTER_DATA_DIR=str(home / "data"), JUPYTERLAB_SETTINGS_DIR=str(home / "lab-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "lab-workspaces"), IPYTHONDIR=str(home / "ipython"))
    return env


@contextlib.contextmanager
def running_lab(command: list[str], env: dict[str, str], log: Path):
    """Start ``command``; yield ``(process, printed URL)``; stop the server and its kernels."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not (found := URL.search(log.read_text(errors="replace"))):
            if proc.poll() is not None:
                pytest.fail(f"course lab exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no URL printed in {STARTUP_TIMEOUT_S} s:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield proc, found.group(1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for_idle_kernel(url: str) -> str | None:
    """The execution state the server reports for the page's kernel, once it is idle or the wait is over."""
    parts = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(parts.query).get("token", [""])[0]
    api = f"{parts.scheme}://{parts.netloc}/api/kernels?token={token}"
    state, deadline = None, time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(api, timeout=10) as reply:
                kernels = json.load(reply)
        except urllib.error.HTTPError as exc:
            # jupyter_server answers 500 to a kernel list asked for while a kernel is starting (its
            # last_activity is still None: TraitError in kernel_model); Lab's own polling asks again
            if exc.code != 500:
                raise
            time.sleep(0.5)
            continue
        state = kernels[0].get("execution_state") if kernels else None
        if state == "idle":
            break
        time.sleep(0.5)
    return state


def open_in_browser(url: str, screenshot: Path) -> dict:
    """What the printed URL shows: the current document's path, and the notifications on screen."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=STARTUP_TIMEOUT_S * 1000)
            # the kernel is up and has answered: until then the page still has a websocket handshake under way,
            # and stopping the server mid-handshake makes the kernel and jupyter_server log tracebacks of their own
            kernel = _wait_for_idle_kernel(url)
            page.wait_for_timeout(3000)   # notifications arrive once Lab has restored its layout
            tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").first.inner_text()
            toasts = page.locator(".Toastify__toast, .jp-Notification-Toast").all_inner_texts()
            headings = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownOutput h1").all_inner_texts()
            page.screenshot(path=str(screenshot))
            return {"tab": tab, "toasts": toasts, "headings": headings, "kernel": kernel}
        finally:
            browser.close()


def _check_lesson_one(seen: dict) -> None:
    assert "01_lesson_goals" in seen["tab"], seen
    assert seen["headings"], f"lesson 01 shows no title: {seen}"
    assert seen["kernel"] == "idle", f"lesson 01's kernel never became ready: {seen}"
    assert not [t for t in seen["toasts"] if NEWS_PROMPT.lower() in t.lower()], seen["toasts"]


# jupyter_server 2.x logs this traceback when Lab closes a kernel websocket while the server is still
# waiting for the kernel's first reply (it then reconnects, and the kernel is idle, which the test checks):
# jupyter-server/jupyter_server#1265, open upstream. Seen whenever the kernel starts slowly, e.g. as a new
# user whose bytecode cache is cold. Only that traceback is forgiven; any other fails the test.
_SERVER_RACE = re.compile(
    r"Traceback \(most recent call last\):(?:(?!Traceback).)*?jupyter_server/services/kernels/websocket\.py"
    r"(?:(?!Traceback).)*?AttributeError: 'NoneType' object has no attribute 'kernel_ws_protocol'", re.S)


def _without_known_server_race(log: str) -> str:
    return _SERVER_RACE.sub("", log)


needs_browser = pytest.mark.skipif(not CHROMIUM, reason="no Chromium; as root, `make test` installs Debian's")


def test_lab_command_line_as_root_and_as_user(monkeypatch):
    """Without starting anything: the flags that make Lab start as root, at lesson 01, without the news."""
    from course_tools import lab

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    command = lab.lab_command(Path("/w"), ["--port", "8899"])
    assert "--allow-root" in command and command[-2:] == ["--port", "8899"]
    assert "--LabApp.default_url=/lab/tree/notebooks/01_lesson_goals.ipynb" in command
    settings = Path(next(a for a in command if a.startswith("--LabApp.app_settings_dir=")).split("=", 1)[1])
    assert '"fetchNews": "false"' in (settings / "overrides.json").read_text()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "--allow-root" not in lab.lab_command(Path("/w"), [])


@needs_browser
def test_lab_as_root_opens_lesson_one_of_the_workspace(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("this case is about running as root")
    env = _state_env(tmp_path)
    env["COURSE_WORKSPACE"] = str(tmp_path / "work")
    # what `make lab LAB_ARGS="--no-browser --port N --ip 127.0.0.1"` runs
    command = [str(COURSE), "lab", "--no-browser", "--port", str(free_port()), "--ip", "127.0.0.1"]
    with running_lab(command, env, tmp_path / "lab.log") as (_, url):
        assert "/lab/tree/notebooks/01_lesson_goals.ipynb" in url
        seen = open_in_browser(url, tmp_path / "lab-root.png")
    _check_lesson_one(seen)
    assert (tmp_path / "work" / "notebooks" / "01_lesson_goals.ipynb").is_file()


@needs_browser
@pytest.mark.skipif(bool(can_make_users()), reason=can_make_users() or "ok")
def test_lab_as_an_ordinary_user_in_a_checkout_they_do_not_own(tmp_path):
    """The student is not root and the checkout is not theirs: the workspace goes to their home."""
    user = ordinary_user()
    home = Path(user.pw_dir) / f"lab-test-{os.getpid()}-{tmp_path.name}"
    subprocess.run(["runuser", "-u", user.pw_name, "--", "mkdir", "-p", str(home)], check=True)
    try:
        env = _state_env(home)
        port = free_port()
        command = ["runuser", "-u", user.pw_name, "--", "env", f"HOME={home}", str(COURSE), "lab",
                   "--no-browser", "--port", str(port), "--ip", "127.0.0.1"]
        with running_lab(command, env, tmp_path / "lab.log") as (_, url):
            seen = open_in_browser(url, tmp_path / "lab-user.png")
        log = (tmp_path / "lab.log").read_text(errors="replace")
        _check_lesson_one(seen)
        assert "--allow-root" not in log and "Traceback" not in _without_known_server_race(log), log[-3000:]
        workspace = home / "torch-compile-course-work"
        assert "is not writable by you" in log
        lesson = workspace / "notebooks" / "01_lesson_goals.ipynb"
        assert lesson.is_file() and lesson.stat().st_uid == user.pw_uid
    finally:
        shutil.rmtree(home, ignore_errors=True)
