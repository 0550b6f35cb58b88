"""A student's and an instructor's hands on the hub, in headless Chromium (Playwright).

Each function does what a person does on the page: log in on the hub's login form, type an
answer into a notebook cell in JupyterLab and save it, open a Lab terminal and run a command,
read what the page shows. Screenshots go where the caller says, for a person to look at.

A command typed into a Lab terminal also writes its output and exit status to a file in the
student's home (``~/.hub-test/N.out`` and ``N.rc``): the test reads those as root, because xterm
draws its text on a canvas where the DOM has no text to read. So that the screenshot reads as a
person's terminal, a short shell function ``t`` does the recording: it is typed once and the screen
cleared, then each command shows as ``t N 'COMMAND'`` followed by its own output.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
FIRST_LESSON = "notebooks/01_lesson_goals.ipynb"
LAB_TIMEOUT_MS = 240_000      # a server start plus Lab's first load, on 2 busy cores (never asserted as a speed)
COMMAND_TIMEOUT_S = 900       # `course submit` / `course check` start Python and torch in a busy machine


def skip_reason() -> str:
    if not CHROMIUM:
        return "no Chromium (/usr/bin/chromium); as root, `make browser` installs Debian's"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "no playwright in this venv"
    return ""


def browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)


def log_in(page, hub_url: str, name: str, password: str) -> None:
    """The hub's own login page: name, password, submit."""
    page.goto(f"{hub_url}hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.click("#login_submit")


def wait_for_notebook(page, name_part: str) -> str:
    """Wait until Lab shows a notebook whose tab names ``name_part``; return the tab's text."""
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell", timeout=LAB_TIMEOUT_MS)
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
    deadline = time.monotonic() + LAB_TIMEOUT_MS / 1000
    while name_part not in (text := tab.first.inner_text()):
        if time.monotonic() > deadline:
            raise AssertionError(f"Lab shows {text!r}, not {name_part}")
        page.wait_for_timeout(500)
    # the notebook itself, drawn: every lesson and exercise opens with a title
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownOutput h1", timeout=LAB_TIMEOUT_MS)
    return text


def current_notebook(page):
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")


def find_cell(page, marker: str, *, most_cells: int = 80):
    """The code cell showing ``marker``. Lab draws only the cells near the screen, so this walks
    down the notebook a cell at a time (command mode, arrow down) until the cell is drawn."""
    notebook = current_notebook(page)
    cell = notebook.locator(".jp-CodeCell", has_text=marker).first
    notebook.locator(".jp-Cell").first.click()
    page.keyboard.press("Escape")
    for _ in range(most_cells):
        if cell.count():
            cell.scroll_into_view_if_needed()
            return cell
        page.keyboard.press("ArrowDown")
        page.wait_for_timeout(150)
    raise AssertionError(f"no cell showing {marker!r} in {most_cells} cells")


def replace_cell_source(page, marker: str, new_source: str) -> None:
    """Click into the code cell whose text contains ``marker``, select all of it, type ``new_source``.

    The text arrives as one insertion (as a paste does), so the editor's auto-indent and bracket
    closing leave it as written."""
    cell = find_cell(page, marker)
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(new_source)
    page.keyboard.press("Escape")


def save(page) -> None:
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)


def open_path(page, path: str) -> None:
    """File > Open from Path..., as a student opens a file by its path (relative to their home): the
    file opens in a new tab of the Lab already loaded, with no reload of the page."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Open from Path")).click()
    field = page.locator(".jp-Dialog input").first
    field.wait_for(timeout=LAB_TIMEOUT_MS)
    field.fill(path)
    page.keyboard.press("Enter")


def open_terminal(page) -> None:
    """File > New > Terminal, as a student opens one."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^New$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Terminal$")).click()
    page.wait_for_selector(".jp-Terminal .xterm", timeout=LAB_TIMEOUT_MS)
    page.wait_for_timeout(1500)


class Terminal:
    """Commands typed into the Lab terminal on screen; their output read back from the student's home."""

    def __init__(self, page, home: Path, *, start: int = 0):
        self.page, self.home, self.count = page, home, start

    RECORDER = ('mkdir -p ~/.hub-test; t() { (eval "$2") 2>&1 | tee ~/.hub-test/$1.out; '
                'echo ${PIPESTATUS[0]} > ~/.hub-test/$1.rc; }; clear')

    def type_line(self, line: str) -> None:
        self.page.locator(".jp-Terminal .xterm").first.click()
        self.page.keyboard.type(line)
        self.page.keyboard.press("Enter")

    def run(self, command: str, *, timeout_s: float = COMMAND_TIMEOUT_S) -> tuple[int, str]:
        if "'" in command:
            raise ValueError(f"{command!r}: the terminal's recorder takes commands without single quotes")
        if not getattr(self, "_recording", False):
            self.type_line(self.RECORDER)          # once per shell (a reloaded Lab keeps its terminal's shell)
            self._recording = True
        self.count += 1
        n = self.count
        self.type_line(f"t {n} '{command}'")
        rc_file = self.home / ".hub-test" / f"{n}.rc"
        deadline = time.monotonic() + timeout_s
        while not (rc_file.exists() and rc_file.read_text().strip()):
            if time.monotonic() > deadline:
                pytest.fail(f"`{command}` typed in the Lab terminal did not finish in {timeout_s:.0f} s")
            time.sleep(0.2)
        self.page.wait_for_timeout(500)
        return int(rc_file.read_text().strip()), (self.home / ".hub-test" / f"{n}.out").read_text(errors="replace")
