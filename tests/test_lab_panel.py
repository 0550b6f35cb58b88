"""Lab's Exercises panel without a hub: its server extension through a real Jupyter server, then the panel itself
in real JupyterLab in headless Chromium, by clicks, as a student works.

The server serves a workspace (a copy of the course's exercises) as ``course lab`` does (``COURSE_WORKSPACE`` is
that folder). Through the server: a request without the user's token is refused, and so is a POST with the login
cookie but without the XSRF token; a broken notebook is listed with the grader's reason and its Check fails with
it; a hand-in without a student id is refused, saying why; a server whose exchange does not answer says so.

In the browser: the panel lists ex01 as not started; the student opens it from the panel, types an answer and
does not save; Check says plainly that the notebook has unsaved changes and offers to save first; after "Save,
then check" the panel shows ``course check``'s output and the public score; with a student id, Hand in writes
the hand-in file ``course submit --student ID`` writes, and the panel says it is handed in and which copy
counts. Screenshots go to build/test-screenshots/panel/ (kept, for a person to look at). Feedback on a hub:
tests/hub/test_panel_on_hub.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
from pathlib import Path
from unittest import mock

import nbformat
import pytest
import requests
from lab_panel_page import card, wait_done, wait_status

from course_grader.ui.check_record import RECORD_NAME
from course_grader.ui.submit import default_handin

from lab_server import jupyter_server

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hub"))
import lab_browser  # noqa: E402  (tests/hub/lab_browser.py: a student's hands in Lab)

SCREENSHOTS = ROOT / "build" / "test-screenshots" / "panel"
EX01 = "ex01_capture_boundary"
BROKEN = "ex02_diagnose"
STUB_MARKER = "ex01-rewrite: replace this line"
ANSWER = '''def safe_normalize_rewrite(x):
    """Same values, dtypes and gradients as safe_normalize, captured as one graph."""
    norm = x.norm()
    positive = norm > 0   # typed in Lab by the panel's test
    safe_norm = torch.where(positive, norm, torch.ones_like(norm))
    return torch.where(positive, x / safe_norm, x)
'''
# as `course lab` starts it: the course's Lab settings (no news pop-up); the app object for the test to wait on
LAB_ARGS = ["--LabApp.expose_app_in_browser=True", f"--LabApp.app_settings_dir={ROOT / 'lab' / 'settings'}"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("workspace")
    (ws / "exercises").mkdir()
    for path in sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb")):
        shutil.copy(path, ws / "exercises" / path.name)
    (ws / "exercises" / f"{BROKEN}.ipynb").write_text('{"cells": [ this is not JSON')
    return ws


@contextlib.contextmanager
def served(workspace: Path, state: Path, app: str, **env):
    with mock.patch.dict(os.environ, {"COURSE_WORKSPACE": str(workspace), **env}):
        for name in ("COURSE_EXCHANGE_URL", "JUPYTERHUB_API_TOKEN", "COURSE_EXCHANGE_TOKEN"):
            if name not in env:
                os.environ.pop(name, None)
        with jupyter_server(workspace, state, app=app,
                            extra_args=LAB_ARGS if app == "jupyterlab" else []) as s:
            yield s


@pytest.fixture(scope="module")
def server(workspace, tmp_path_factory):
    with served(workspace, tmp_path_factory.mktemp("lab-state"), "jupyterlab") as running:
        yield running


def wait_job(server, job: dict, timeout_s: float = 600) -> dict:
    import time

    deadline = time.monotonic() + timeout_s
    while job["state"] == "running":
        assert time.monotonic() < deadline, f"{job['command']} still running after {timeout_s:.0f} s"
        time.sleep(0.5)
        job = server.api("GET", f"/course-panel/jobs/{job['id']}").json()
    return job


def test_without_the_token_every_route_is_refused(server):
    routes = (("GET", "exercises"), ("POST", f"exercises/{EX01}/check"), ("POST", f"exercises/{EX01}/handin"),
              ("POST", "feedback"), ("GET", "jobs/0123abcd"))
    for method, path in routes:
        r = requests.request(method, f"{server.url}/course-panel/{path}", timeout=60)
        assert r.status_code == 403, (method, path, r.status_code)


def test_a_post_with_the_login_cookie_but_no_xsrf_token_is_refused(server):
    browser = requests.Session()
    browser.get(f"{server.url}/lab?token={server.token}", timeout=120).raise_for_status()
    assert "_xsrf" in browser.cookies
    assert browser.get(f"{server.url}/course-panel/exercises", timeout=120).status_code == 200   # a GET needs none
    url = f"{server.url}/course-panel/exercises/{BROKEN}/check"
    refused = browser.post(url, timeout=60)
    assert refused.status_code == 403 and "_xsrf" in refused.json()["message"], refused.text
    accepted = browser.post(url, headers={"X-XSRFToken": browser.cookies["_xsrf"]}, timeout=60)
    assert accepted.status_code == 202, accepted.text
    wait_job(server, accepted.json())


def test_a_broken_notebook_is_listed_with_the_graders_reason_and_its_check_fails(server):
    rows = {e["name"]: e for e in server.api("GET", "/course-panel/exercises").json()["exercises"]}
    assert "the grader would reject this file" in rows[BROKEN]["problem"], rows[BROKEN]
    assert rows[EX01]["status"] == "not started" and rows[EX01]["path"] == f"exercises/{EX01}.ipynb"
    job = wait_job(server, server.api("POST", f"/course-panel/exercises/{BROKEN}/check").json())
    assert job["state"] == "failed" and job["rc"] == 1 and "REJECTED" in job["output"], job


def test_a_hand_in_without_a_hub_needs_a_student_id_and_says_so(server):
    r = requests.post(f"{server.url}/course-panel/exercises/{EX01}/handin", json={},
                      headers={"Authorization": f"token {server.token}"}, timeout=60)
    assert r.status_code == 400 and "student id" in r.json()["message"], r.text
    r = requests.post(f"{server.url}/course-panel/exercises/ex99_nothing/check",
                      headers={"Authorization": f"token {server.token}"}, timeout=60)
    assert r.status_code == 404 and "no copy of ex99_nothing" in r.json()["message"], r.text


def test_an_exchange_that_does_not_answer_is_said_plainly(workspace, tmp_path):
    from lab_server import free_port

    dead = f"http://127.0.0.1:{free_port()}/services/course-exchange/"
    with served(workspace, tmp_path, "jupyter_server", COURSE_EXCHANGE_URL=dead,
                JUPYTERHUB_API_TOKEN=secrets.token_hex(8)) as hubless:
        listing = hubless.api("GET", "/course-panel/exercises").json()
        assert listing["mode"] == "hub" and "did not answer" in listing["problem"], listing
        assert len(listing["exercises"]) >= 9          # the files' own states are shown all the same
        job = wait_job(hubless, hubless.api("POST", f"/course-panel/exercises/{EX01}/handin").json())
        assert job["rc"] == 2 and "did not answer" in job["output"], job
        r = requests.post(f"{hubless.url}/course-panel/feedback", headers={"Authorization": f"token {hubless.token}"},
                          timeout=60)
        assert r.status_code == 502 and "did not answer" in r.json()["message"], r.text


# -- the panel in JupyterLab, by clicks ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lab(server):
    if why := lab_browser.skip_reason():
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    with sync_playwright() as p:
        browser = lab_browser.browser(p)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            page.goto(f"{server.url}/lab?token={server.token}")
            page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')",
                                   timeout=lab_browser.LAB_TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def test_a_student_checks_and_hands_in_from_the_panel(lab, workspace):
    page, student = lab, f"panel-test-{secrets.token_hex(3)}"
    handin = default_handin() / f"{student}__{EX01}.ipynb"
    try:
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='course-exercises']").click()
        wait_status(page, EX01, "not started")
        assert "the grader would reject this file" in card(page, BROKEN).inner_text()
        page.screenshot(path=str(SCREENSHOTS / "1-panel-lists-the-exercises.png"))

        # open ex01 from the panel, answer, and do not save
        card(page, EX01).locator(".cc-title").click()
        lab_browser.wait_for_notebook(page, EX01)
        lab_browser.replace_cell_source(page, STUB_MARKER, ANSWER)
        card(page, EX01).get_by_role("button", name="Check").click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=60_000)
        said = dialog.inner_text()
        page.screenshot(path=str(SCREENSHOTS / "2-check-with-unsaved-changes.png"))
        assert "unsaved changes" in said and "as saved on disk" in said, said
        assert "typed in Lab by the panel's test" not in (workspace / "exercises" / f"{EX01}.ipynb").read_text()
        dialog.get_by_role("button", name="Save, then check").click()

        output = wait_done(page, EX01, "check")
        page.screenshot(path=str(SCREENSHOTS / "3-checked.png"))
        assert "typed in Lab by the panel's test" in (workspace / "exercises" / f"{EX01}.ipynb").read_text()
        assert "public tests: 5/5 points" in output and "exit status 0" in output, output
        wait_status(page, EX01, "checked")
        assert "public tests 5/5 points" in card(page, EX01).inner_text()
        record = json.loads((workspace / RECORD_NAME).read_text())["checks"][f"exercises/{EX01}.ipynb"]
        assert record["outcome"] == "passes" and record["earned"] == 5

        # hand in, with the student id a course without a hub gives
        field = page.locator(".cc-ExercisesPanel input.cc-student")
        field.fill(student)
        field.press("Enter")
        field.blur()
        wait_status(page, EX01, "checked")
        card(page, EX01).get_by_role("button", name="Hand in").click()
        output = wait_done(page, EX01, "submit")
        wait_status(page, EX01, "handed in")
        page.screenshot(path=str(SCREENSHOTS / "4-handed-in.png"))
        assert f"handed in: {handin}" in output and "exit status 0" in output, output
        shown = card(page, EX01).inner_text()
        assert f"{handin} counts; the saved file as it is now" in shown, shown
        handed = nbformat.read(handin, as_version=4)
        assert any("typed in Lab by the panel's test" in c.source for c in handed.cells)
    finally:
        handin.unlink(missing_ok=True)
