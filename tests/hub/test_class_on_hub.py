"""A class on a real hub, end to end, as its people meet it: a browser, real logins, real Unix users.

One hub from hub/jupyterhub_config.py in users mode (root: PAM logins, each server run as its
student by LocalProcessSpawner), the student edition published by ``course publish``, and headless
Chromium. In order:

1. bob and alice log in on the hub's login page; the server's default URL is the nbgitpuller link,
   which clones the edition into their home and lands them on lesson 01;
2. alice answers ex01 in Lab (typed into the answer cell, saved with Ctrl+S);
3. in a Lab terminal she cannot read bob's copy of the course nor the exchange's storage
   (homes 0700, storage 0700 and the service's), then hands in with ``course submit FILE``
   (no ``--student``: the hub says who she is);
4. prof, an ordinary user in the course's instructor group, collects, grades (the rootless sandbox,
   as prof), hands back and returns, in his own Lab terminal;
5. alice reloads Lab, fetches her feedback and opens its page in Lab: her score is on it;
6. the course is updated (a new commit in the edition), alice opens the link again: nbgitpuller's
   merge brings the update and keeps her answer.

The exchange runs as its own Unix user (``hub-exchange``), as the hub's config runs it as root.
Screenshots of each step go to build/test-screenshots/hub/ (kept after the run; the path is printed);
the seconds each step took are printed. The hub and the students' servers take free ports. Skipped,
naming the reason, without root, Chromium, playwright, node or configurable-http-proxy.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import hubtools
import lab_browser
import nbformat
import pytest
import unix_users

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hub"))
from course_link import student_link  # noqa: E402  (hub/course_link.py: the link the hub's config makes)

ROOT = Path(__file__).resolve().parents[2]
COURSE = Path(sys.executable).with_name("course")
SCREENSHOTS = ROOT / "build" / "test-screenshots" / "hub"     # kept after the run, for a person to look at
COURSE_ID = "e2e"
EXERCISE = "exercises/ex01_capture_boundary.ipynb"
STUB_MARKER = "ex01-rewrite: replace this line"
ANSWER = '''def safe_normalize_rewrite(x):
    """Same values, dtypes and gradients as safe_normalize, captured as one graph."""
    norm = x.norm()
    positive = norm > 0   # typed in Lab by the hub's end-to-end test
    safe_norm = torch.where(positive, norm, torch.ones_like(norm))
    return torch.where(positive, x / safe_norm, x)
'''
UPDATE_LINE = "Course update: this sentence came with the second publish."

pytestmark = pytest.mark.skipif(
    bool(hubtools.skip_reason() or unix_users.why_not() or lab_browser.skip_reason()),
    reason=hubtools.skip_reason() or unix_users.why_not() or lab_browser.skip_reason() or "ok")


def answer_cell(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return next(c.source for c in nb.cells if "def safe_normalize_rewrite(x):" in c.source
                and c.cell_type == "code" and "explain(" not in c.source)


def update_the_course(edition: Path) -> None:
    """A course update as a publish makes it: one more commit on the edition's branch.

    (``course publish`` takes the checkout's current files; the test cannot edit the checkout, so it
    commits the changed exercise itself, with git, as the publish does.)"""
    path = edition / EXERCISE
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += f"\n\n{UPDATE_LINE}"
    nbformat.write(nb, path)
    git = ["git", "-C", str(edition), "-c", "user.name=course publish", "-c", "user.email=course@localhost"]
    subprocess.run([*git, "commit", "-qam", "a course update"], check=True)


def publish(edition: Path) -> None:
    """``course publish EDITION``; or, with COURSE_HUB_TEST_EDITION, a clone of an edition published before."""
    earlier = os.environ.get("COURSE_HUB_TEST_EDITION")
    if earlier:
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", earlier, str(edition)], check=True)
        return
    published = subprocess.run([str(COURSE), "publish", str(edition)], capture_output=True, text=True,
                               cwd=ROOT, timeout=600)
    if published.returncode != 0:
        pytest.fail(f"course publish could not make the student edition:\n{published.stdout}{published.stderr}")


class Steps:
    """Prints how long each step took (figures for a person; nothing is asserted about them)."""

    def __init__(self):
        self.start = self.last = time.monotonic()

    def done(self, what: str) -> None:
        t = time.monotonic()
        print(f"[hub e2e] {what}: {t - self.last:.1f} s (total {t - self.start:.1f} s)", flush=True)
        self.last = t


def test_a_class_on_the_hub(tmp_path):
    shots = SCREENSHOTS
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    print(f"screenshots: {shots}")
    shared = Path(tempfile.mkdtemp(prefix="hub-e2e-"))     # readable by the students: the edition, git's config
    os.chmod(shared, 0o755)
    edition = shared / "edition"
    steps = Steps()
    try:
        env = {"COURSE_HUB_EDITION": str(edition), "COURSE_HUB_SHARED": str(shared / "hub"),
               "COURSE_EXCHANGE_DIR": str(shared / "exchange"), "COURSE_EXCHANGE_USER": "hub-exchange"}
        # the edition is published while the users are made and the hub starts (the hub's config only
        # names the edition's path; the first student's link reads it)
        with ThreadPoolExecutor(1) as pool:
            published = pool.submit(publish, edition)
            with unix_users.class_users(["hub-alice", "hub-bob", "hub-prof", "hub-exchange"]) as users:
                with hubtools.running_hub(tmp_path / "state", demo=False, env=env) as hub:
                    steps.done("the hub, its proxy and the exchange up")
                    published.result()
                    steps.done("course publish (the student edition), started with the hub")
                    _the_class(hub, users, edition, shared / "exchange", shots, steps)
                    steps.done("the class")
                steps.done("the hub stopped")
            steps.done("Unix users removed")
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _the_class(hub, users, edition: Path, storage: Path, shots: Path, steps: Steps) -> None:
    from playwright.sync_api import sync_playwright

    alice, bob, prof, service = users["hub-alice"], users["hub-bob"], users["hub-prof"], users["hub-exchange"]
    assert storage.stat().st_uid == service.uid and stat.S_IMODE(storage.stat().st_mode) == 0o700
    with open(f"/proc/{hub.service_pid()}/status") as fh:
        uids = next(line for line in fh if line.startswith("Uid:")).split()[1:]
    assert set(uids) == {str(service.uid)}, uids           # the exchange runs as its own user, not root
    hub.add_group(f"course-{COURSE_ID}-students", [alice.name, bob.name])
    hub.add_group(f"course-{COURSE_ID}-instructors", [prof.name])
    assert "PAMAuthenticator" in hub.log_text() and "LocalProcessSpawner" in hub.log_text()
    clone = alice.home / "torch-compile-course"

    with sync_playwright() as p:
        browser = lab_browser.browser(p)
        try:
            # 1. log in; the nbgitpuller link of the server's default URL lands on lesson 01. Bob's login and
            # alice's load at once (two people in one class); prof's server starts meanwhile, as if he had
            # logged in earlier (he logs in with the browser in step 4, onto his running server)
            hub.api("POST", f"users/{prof.name}/server", ok=(201, 202))
            bob_page = browser.new_context().new_page()
            lab_browser.log_in(bob_page, hub.url, bob.name, bob.password)
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            lab_browser.log_in(page, hub.url, alice.name, alice.password)
            lab_browser.wait_for_notebook(page, "01_lesson_goals")
            lab_browser.wait_for_notebook(bob_page, "01_lesson_goals")
            page.screenshot(path=str(shots / "1-alice-lesson-01.png"))
            steps.done("1. bob and alice log in; the link lands them on lesson 01")
            assert page.url.endswith(f"/user/{alice.name}/lab/tree/torch-compile-course/{lab_browser.FIRST_LESSON}")
            assert (clone / ".git").is_dir() and (clone / EXERCISE).stat().st_uid == alice.uid
            assert not (clone / "solutions").exists() and not (clone / "tests").exists()
            for home in (alice.home, bob.home):
                assert stat.S_IMODE(home.stat().st_mode) == 0o700, home

            # 2. answer ex01 in Lab and save
            lab_browser.open_path(page, f"torch-compile-course/{EXERCISE}")
            lab_browser.wait_for_notebook(page, "ex01_capture_boundary")
            lab_browser.replace_cell_source(page, STUB_MARKER, ANSWER)
            lab_browser.save(page)
            page.screenshot(path=str(shots / "2-alice-answered-ex01.png"))
            steps.done("2. alice answers ex01 in Lab and saves")
            assert "typed in Lab by the hub's end-to-end test" in answer_cell(clone / EXERCISE)

            # 3. a Lab terminal: other people's files stay closed; hand in with no --student
            lab_browser.open_terminal(page)
            terminal = lab_browser.Terminal(page, alice.home)
            rc, out = terminal.run(f"cat {bob.home}/torch-compile-course/{EXERCISE} | head -c 100")
            assert "Permission denied" in out, out
            rc, out = terminal.run(f"ls {storage}")
            assert rc != 0 and "Permission denied" in out, out
            assert storage.stat().st_uid != alice.uid and stat.S_IMODE(storage.stat().st_mode) == 0o700
            rc, out = terminal.run(f"cd ~/torch-compile-course && course submit {EXERCISE}")
            page.screenshot(path=str(shots / "3-alice-terminal-submit.png"))
            steps.done("3. alice's terminal: others' files closed; course submit")
            assert rc == 0 and "handed in" in out, out

            # 4. the instructor, in his own Lab terminal: collect, grade (rootless sandbox, as prof), return
            prof_page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            lab_browser.log_in(prof_page, hub.url, prof.name, prof.password)
            lab_browser.wait_for_notebook(prof_page, "01_lesson_goals")
            lab_browser.open_terminal(prof_page)
            teacher = lab_browser.Terminal(prof_page, prof.home)
            rc, out = teacher.run(f"course collect {COURSE_ID} --to ~/collected")
            assert rc == 0 and "collected 1 hand-in(s)" in out, out
            assert (prof.home / "collected" / f"{alice.name}__ex01_capture_boundary.ipynb").is_file()
            rc, out = teacher.run("course grade run ~/collected --out ~/graded --no-progress")
            assert rc == 0 and "grader faults 0" in out, out
            rc, out = teacher.run("course grade hand-back ~/graded && "
                                  f"course return {COURSE_ID} ~/graded-hand-back")
            prof_page.screenshot(path=str(shots / "4-prof-terminal-return.png"))
            steps.done("4. prof logs in, collects, grades, returns")
            assert rc == 0 and "returned feedback to 1 student(s)" in out, out

            # 5. alice reloads Lab, fetches her feedback, opens its page in Lab
            page.reload()                                   # Lab restores her terminal, still running
            page.wait_for_selector(".jp-Terminal .xterm", timeout=lab_browser.LAB_TIMEOUT_MS)
            page.wait_for_timeout(1500)
            rc, out = terminal.run("course feedback")
            score = re.search(r"(\d+(?:\.\d+)?) / (\d+(?:\.\d+)?) points", out)
            assert rc == 0 and score, out
            total, possible = (float(x) for x in score.groups())
            page_file = clone / "feedback" / COURSE_ID / "index.html"
            assert page_file.is_file() and page_file.stat().st_uid == alice.uid
            lab_browser.open_path(page, f"torch-compile-course/feedback/{COURSE_ID}/index.html")
            frame = page.frame_locator(".jp-HTMLViewer iframe").first
            frame.locator("body").wait_for(timeout=lab_browser.LAB_TIMEOUT_MS)
            shown = frame.locator("body").inner_text()
            page.screenshot(path=str(shots / "5-alice-feedback-in-lab.png"))
            steps.done("5. alice fetches and opens her feedback")
            assert f"Feedback for {alice.name}" in shown and "Exercise 1" in shown, shown[:2000]
            assert f"{total:g} / {possible:g}" in shown and bob.name not in shown, shown[:2000]
            print(f"alice's score, printed by `course feedback` and shown in Lab: {total:g} / {possible:g}")

            # 6. a course update, and the link again: her answer stays, the update arrives
            update_the_course(edition)
            page.goto(student_link(hub.url, str(edition)))
            lab_browser.wait_for_notebook(page, "01_lesson_goals")
            page.screenshot(path=str(shots / "6-alice-after-second-pull.png"))
            steps.done("6. a course update, the link again")
        finally:
            browser.close()
    assert "typed in Lab by the hub's end-to-end test" in answer_cell(clone / EXERCISE)
    merged = nbformat.read(clone / EXERCISE, as_version=4)
    assert UPDATE_LINE in merged.cells[0].source
    log = subprocess.run(["runuser", "-u", alice.name, "--", "git", "-C", str(clone), "log", "--format=%s"],
                         capture_output=True, text=True).stdout
    assert "a course update" in log, log
