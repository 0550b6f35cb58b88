"""Lab's Exercises panel on a real hub, by clicks, as a student works: check, hand in, and open the feedback.

One hub from hub/jupyterhub_config.py in users mode (PAM logins, each server run as its student, the real
proxy and the exchange service as its own Unix user), the student edition published by ``course publish``,
headless Chromium. ana logs in (the link lands her on lesson 01), opens the Exercises panel, opens ex01 from
it, types her answer without saving and clicks Check: the panel says the notebook has unsaved changes and
offers to save first; "Save, then check" shows ``course check``'s output and her public score. Hand in sends
the saved file to the exchange (``course submit`` without ``--student``: the hub says who she is) and the panel
says which hand-in counts. The instructor collects, grades and returns with the ``course`` commands (as
his own Unix user, with his hub token); ana's panel then shows the returned score, and Open feedback opens her
page in Lab. Screenshots: build/test-screenshots/hub-panel/ (kept). Skipped, naming the reason, without root,
Chromium, playwright, node or configurable-http-proxy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import hubtools
import lab_browser
import pytest
import unix_users
from lab_panel_page import card, wait_done, wait_status
from test_class_on_hub import ANSWER, STUB_MARKER, Steps, publish

ROOT = Path(__file__).resolve().parents[2]
COURSE = Path(sys.executable).with_name("course")
SCREENSHOTS = ROOT / "build" / "test-screenshots" / "hub-panel"
COURSE_ID = "pnl"
EX01 = "ex01_capture_boundary"

pytestmark = pytest.mark.skipif(
    bool(hubtools.skip_reason() or unix_users.why_not() or lab_browser.skip_reason()),
    reason=hubtools.skip_reason() or unix_users.why_not() or lab_browser.skip_reason() or "ok")


def as_instructor(hub, prof, command: str) -> str:
    """``course ...`` as the instructor in his own shell on the hub machine, with a token from his hub account."""
    env = {"HOME": str(prof.home), "PATH": f"{COURSE.parent}:/usr/bin:/bin", "COURSE_EXCHANGE_URL": hub.exchange_url,
           "COURSE_EXCHANGE_TOKEN": hub.token(prof.name)}
    done = subprocess.run(["runuser", "-u", prof.name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
                           "bash", "-c", f"cd ~ && {command}"], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"{command}:\n{done.stdout}{done.stderr}"
    return done.stdout


def test_a_student_checks_hands_in_and_opens_feedback_from_the_panel(tmp_path):
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    shared = Path(tempfile.mkdtemp(prefix="hub-panel-"))
    os.chmod(shared, 0o755)
    edition = shared / "edition"
    steps = Steps()
    try:
        publish(edition)
        steps.done("course publish")
        env = {"COURSE_HUB_EDITION": str(edition), "COURSE_HUB_SHARED": str(shared / "hub"),
               "COURSE_HUB_COURSES": COURSE_ID, "COURSE_EXCHANGE_DIR": str(shared / "exchange"),
               "COURSE_EXCHANGE_USER": "hub-pnl-x"}
        with unix_users.class_users(["hub-pnl-ana", "hub-pnl-prof", "hub-pnl-x"]) as users:
            with hubtools.running_hub(tmp_path / "state", demo=False, env=env) as hub:
                steps.done("the hub, its proxy and the exchange up")
                _the_panel(hub, users["hub-pnl-ana"], users["hub-pnl-prof"], steps)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _the_panel(hub, ana, prof, steps) -> None:
    from playwright.sync_api import sync_playwright

    hub.add_group(f"course-{COURSE_ID}-students", [ana.name])
    hub.add_group(f"course-{COURSE_ID}-instructors", [prof.name])
    clone = ana.home / "torch-compile-course"
    with sync_playwright() as p:
        browser = lab_browser.browser(p)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            lab_browser.log_in(page, hub.url, ana.name, ana.password)
            lab_browser.wait_for_notebook(page, "01_lesson_goals")
            page.locator(".jp-SideBar .lm-TabBar-tab[data-id='course-exercises']").click()
            wait_status(page, EX01, "not started")
            panel = page.locator(".cc-ExercisesPanel").inner_text()
            assert f"hand-ins go to the exchange of course {COURSE_ID}" in panel, panel
            page.screenshot(path=str(SCREENSHOTS / "1-panel-on-the-hub.png"))
            steps.done("1. ana logs in; the panel lists ex01 as not started")

            # 2. open ex01 from the panel, answer, Check without saving: the panel offers to save first
            card(page, EX01).locator(".cc-title").click()
            lab_browser.wait_for_notebook(page, EX01)
            lab_browser.replace_cell_source(page, STUB_MARKER, ANSWER)
            card(page, EX01).get_by_role("button", name="Check").click()
            dialog = page.locator(".jp-Dialog")
            dialog.wait_for(timeout=60_000)
            assert "unsaved changes" in dialog.inner_text()
            page.screenshot(path=str(SCREENSHOTS / "2-unsaved-changes.png"))
            dialog.get_by_role("button", name="Save, then check").click()
            output = wait_done(page, EX01, "check")
            page.screenshot(path=str(SCREENSHOTS / "3-checked.png"))
            steps.done("2. answer, Check (saved first)")
            assert "public tests: 5/5 points" in output and "exit status 0" in output, output
            assert "typed in Lab by the hub's end-to-end test" in (clone / "exercises" / f"{EX01}.ipynb").read_text()
            wait_status(page, EX01, "checked")

            # 3. Hand in: through the exchange
            card(page, EX01).get_by_role("button", name="Hand in").click()
            output = wait_done(page, EX01, "submit")
            wait_status(page, EX01, "handed in")
            page.screenshot(path=str(SCREENSHOTS / "4-handed-in.png"))
            steps.done("3. Hand in")
            assert re.search(r"handed in: #\d+ " + EX01, output) and "this one counts" in output, output
            shown = card(page, EX01).inner_text()
            assert "this copy counts; the saved file as it is now" in shown, shown

            # 4. the instructor collects, grades, returns
            as_instructor(hub, prof, f"course collect {COURSE_ID} --to ~/collected")
            graded = as_instructor(hub, prof, "course grade run ~/collected --out ~/graded --no-progress")
            assert "grader faults 0" in graded, graded
            as_instructor(hub, prof, "course grade hand-back ~/graded")
            as_instructor(hub, prof, f"course return {COURSE_ID} ~/graded-hand-back")
            steps.done("4. the instructor collects, grades and returns")

            # 5. the panel shows the returned score; Open feedback opens her page in Lab
            page.locator(".cc-ExercisesPanel").get_by_role("button", name="Refresh").click()
            wait_status(page, EX01, "returned")
            returned = re.search(r"returned .*: (\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) points", card(page, EX01).inner_text())
            assert returned, card(page, EX01).inner_text()
            card(page, EX01).get_by_role("button", name="Open feedback").click()
            output = wait_done(page, EX01, "feedback")
            frame = page.frame_locator(".jp-HTMLViewer iframe").first
            frame.locator("body").wait_for(timeout=lab_browser.LAB_TIMEOUT_MS)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(SCREENSHOTS / "5-feedback-opened.png"))
            steps.done("5. returned; Open feedback")
            shown = frame.locator("body").inner_text()
            assert ana.name in shown and "Exercise 1" in shown, shown[:2000]
            total, possible = returned.groups()
            assert f"{float(total):g} / {float(possible):g}" in shown, shown[:2000]   # the page's score is the panel's
            assert (clone / "feedback" / COURSE_ID).is_dir()
        finally:
            browser.close()
