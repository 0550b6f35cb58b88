"""A student and an instructor click the course's link in the LMS, in Chromium, and land in Lab at lesson 01.

The LMS is the test platform (tests/lti/platform.py, lti1p3platform) on 127.0.0.1; the hub is
hub/jupyterhub_config.py in users mode (root: each server runs as its Unix user, LocalProcessSpawner)
with COURSE_HUB_LTI, its real proxy and the student edition published by ``course publish``. The
launch goes as in a real LMS: the course page's link, the OIDC login initiation at the hub, the
platform's authentication endpoint, its auto-submitting form to the hub's callback, the hub's spawn,
then the server's default URL, the nbgitpuller link, which clones the edition and opens lesson 01.

The Unix accounts are made by the test (tests/unix_users.py: removed afterwards, with passage to this
venv); the LTI ``sub`` is the account's name, so the hub's LocalAuthenticator finds them. Screenshots
go to the test's tmp folder (the path is printed). Skipped, saying why, without root, Chromium,
playwright, node or configurable-http-proxy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

for _module in ("lti1p3platform", "fastapi", "uvicorn", "ltiauthenticator"):
    pytest.importorskip(_module, reason=f"no {_module} (requirements.txt); make .venv/.installed")

import hubtools  # noqa: E402
import lab_browser  # noqa: E402
import unix_users  # noqa: E402

from lti import lms_hub  # noqa: E402
from lti.lms_hub import CONTEXT, COURSE, TITLE, hub_users  # noqa: E402
from lti.platform import Flaw  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    bool(hubtools.skip_reason() or unix_users.why_not() or lab_browser.skip_reason()),
    reason=hubtools.skip_reason() or unix_users.why_not() or lab_browser.skip_reason() or "ok")

STUDENT, INSTRUCTOR, FORGER = "hub-lti-alice", "hub-lti-prof", "hub-lti-eve"
NEWCOMER = "hub-lti-newcomer"     # no Unix account before the launch: the hub makes it


def publish(edition: Path) -> None:
    """``course publish EDITION`` (or a clone of COURSE_HUB_TEST_EDITION, an edition published before)."""
    import subprocess
    import sys

    earlier = os.environ.get("COURSE_HUB_TEST_EDITION")
    if earlier:
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", earlier, str(edition)], check=True)
        return
    course = Path(sys.executable).with_name("course")
    done = subprocess.run([str(course), "publish", str(edition)], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    if done.returncode != 0:
        pytest.fail(f"course publish could not make the student edition:\n{done.stdout}{done.stderr}")


def test_a_student_and_an_instructor_launch_from_the_lms_into_lesson_01(tmp_path):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    print(f"screenshots: {shots}")
    shared = Path(tempfile.mkdtemp(prefix="hub-lti-"))        # readable by the students: the edition
    os.chmod(shared, 0o755)
    edition = shared / "edition"
    env = {"COURSE_HUB_EDITION": str(edition), "COURSE_HUB_SHARED": str(shared / "hub")}
    try:
        with ThreadPoolExecutor(1) as pool:
            published = pool.submit(publish, edition)
            with unix_users.class_users([STUDENT, INSTRUCTOR]) as users:
                with lms_hub.platform_and_hub(tmp_path, demo=False, env=env) as (platform, hub):
                    published.result()
                    _launch_both(platform, hub, users, shots)
                    _a_first_launch_makes_the_unix_account(platform, hub)
    finally:
        with unix_users.acl_lock():
            unix_users.remove(NEWCOMER)
        shutil.rmtree(shared, ignore_errors=True)


def _a_first_launch_makes_the_unix_account(platform, hub) -> None:
    import pwd

    import requests

    with pytest.raises(KeyError):
        pwd.getpwnam(NEWCOMER)
    session = requests.Session()
    answer = lms_hub.post_form(session, lms_hub.launch_form(
        session, platform.start_url(NEWCOMER, ["Learner"], CONTEXT, TITLE, "rl-lesson-01")))
    assert answer.status_code == 302, lms_hub.page_text(answer)[-500:]
    assert Path(pwd.getpwnam(NEWCOMER).pw_dir).is_dir()
    assert hub_users(hub)[NEWCOMER]["groups"] == [f"course-{COURSE}-students"]


def _launch_both(platform, hub, users, shots: Path) -> None:
    from playwright.sync_api import sync_playwright

    assert "CourseLTI13LocalAuthenticator" in hub.log_text() and "LocalProcessSpawner" in hub.log_text()
    assert hub_users(hub).keys().isdisjoint({STUDENT, INSTRUCTOR})
    with sync_playwright() as p:
        browser = lab_browser.browser(p)
        try:
            for name, roles, who in ((STUDENT, ["Learner"], "student"), (INSTRUCTOR, ["Instructor"], "instructor")):
                page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                page.goto(platform.launch_url(name, roles, CONTEXT, TITLE, "rl-lesson-01"))
                page.wait_for_selector("#launch")
                page.screenshot(path=str(shots / f"{who}-1-lms-course-page.png"))
                page.click("#launch")
                lab_browser.wait_for_notebook(page, "01_lesson_goals")
                page.screenshot(path=str(shots / f"{who}-2-lab-lesson-01.png"))
                assert page.url.endswith(f"/user/{name}/lab/tree/torch-compile-course/{lab_browser.FIRST_LESSON}")
                clone = users[name].home / "torch-compile-course"
                assert (clone / lab_browser.FIRST_LESSON).stat().st_uid == users[name].uid   # his server, his files
                assert not (clone / "solutions").exists()
            # a launch whose token another key signed: the hub's page says so, and nobody is logged in
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.goto(platform.launch_url(FORGER, ["Instructor"], CONTEXT, TITLE, "rl-lesson-01",
                                          flaw=Flaw.BAD_SIGNATURE))
            page.click("#launch")
            page.wait_for_selector("text=The launch from your course site was refused")
            page.screenshot(path=str(shots / "forged-launch-refused.png"))
            assert "Signature verification failed" in page.inner_text("body")
            assert not [c for c in page.context.cookies() if c["name"] == "jupyterhub-hub-login"]
        finally:
            browser.close()
    state = hub_users(hub)
    assert FORGER not in state
    assert state[STUDENT]["groups"] == [f"course-{COURSE}-students"]
    assert state[INSTRUCTOR]["groups"] == [f"course-{COURSE}-instructors"]
    assert state[STUDENT]["servers"][""]["ready"] and state[INSTRUCTOR]["servers"][""]["ready"]
