"""The Exercises panel as a page in headless Chromium: one exercise's card, its status, its job's output.

Shared by the panel's tests without a hub (tests/test_lab_panel.py) and on the hub
(tests/hub/test_panel_on_hub.py).
"""

from __future__ import annotations

JOB_TIMEOUT_MS = 900_000     # a check compiles and runs the answer in the grader's sandbox on 2 busy cores


def card(page, name: str):
    return page.locator(f".cc-ExercisesPanel .cc-exercise[data-exercise='{name}']")


def wait_done(page, name: str, command: str) -> str:
    """The output of the card's job running ``course COMMAND``, once it ended."""
    page.wait_for_function(
        "([name, command]) => { const pre = document.querySelector(`.cc-exercise[data-exercise='${name}'] "
        "pre.cc-output`); return pre && pre.textContent.startsWith(`$ course ${command}`) "
        "&& pre.dataset.state !== 'running'; }", arg=[name, command], timeout=JOB_TIMEOUT_MS, polling=1000)
    return card(page, name).locator("pre.cc-output").inner_text()


def wait_status(page, name: str, status: str, timeout_ms: int = 180_000) -> None:
    page.wait_for_function(
        "([name, status]) => { const b = document.querySelector(`.cc-exercise[data-exercise='${name}'] .cc-status`);"
        " return b && b.textContent === status; }", arg=[name, status], timeout=timeout_ms, polling=500)
