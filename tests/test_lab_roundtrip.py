"""Opening a notebook in JupyterLab and saving it leaves the file byte for byte as stored.

Lab, on opening a notebook with a kernel, sets two metadata keys: ``kernelspec``
(name, display name and language of the kernel spec) and ``language_info``
(what the kernel's ``kernel_info_reply`` says). The course stores exactly that
(``normalize.lab_metadata``), as written on the Python its outputs were made with: on another Python
release only ``language_info.version`` differs, and Lab marks the notebook changed for that alone.
Two checks, both on a temporary copy of the course:

- every lesson, solution and exercise through a real Jupyter server: GET it with
  the contents API, set the two keys from the server's kernel spec and a real
  kernel's ``kernel_info_reply`` as Lab does, PUT (save) it, compare bytes;
- one lesson and one exercise in real JupyterLab in headless Chromium, when
  Playwright and Chromium are installed: open, let the kernel start, check the
  document is not marked changed, save, compare bytes.
"""

import json
import shutil
from pathlib import Path

import pytest

from course_tools.notebooks.normalize import lab_metadata

from lab_server import jupyter_server, kernel_for

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "solutions", "exercises")
NOTEBOOKS = [str(p.relative_to(ROOT)) for folder in FOLDERS for p in sorted((ROOT / folder).glob("*.ipynb"))]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def release_writes_lab_metadata() -> bool:
    """Whether ``course release`` stores Lab's metadata in the exercises it writes (asked of the release itself)."""
    try:
        from course_grader.exercise.release import render
    except ImportError:
        return False
    written = json.loads(render(sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb"))[0]))["metadata"]
    written = {key: written.get(key) for key in ("kernelspec", "language_info")}
    here = lab_metadata()
    for metadata in (written, here):   # the Python release it was made on may not be this one (as_saved_here)
        (metadata.get("language_info") or {}).pop("version", None)
    return written == here


# Until the release stores Lab's metadata, the exercises cannot pass; once it does, they must.
RELEASE_PENDING = pytest.mark.xfail(
    condition=not release_writes_lab_metadata(), strict=True,
    reason="course_grader.exercise.release drops language_info: it must call "
           "course_tools.notebooks.normalize.apply_lab_metadata on each exercise it writes")


def params(paths):
    return [pytest.param(p, marks=RELEASE_PENDING) if p.startswith("exercises/") else p for p in paths]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Two copies of the course under one root: ``api/`` for the contents-API saves, ``lab/`` for the
    browser, so that the first test's saves cannot pre-normalize what the second one opens."""
    root = tmp_path_factory.mktemp("served")
    for copy in ("api", "lab"):
        for folder in FOLDERS:
            shutil.copytree(ROOT / folder, root / copy / folder)
    return root


@pytest.fixture(scope="module")
def server(served, tmp_path_factory):
    # The JupyterLab app: its REST API serves the first test, its UI the browser test (one start-up for both).
    with jupyter_server(served, tmp_path_factory.mktemp("jupyter-state"), app="jupyterlab",
                        extra_args=["--LabApp.expose_app_in_browser=True"]) as running:
        yield running


@pytest.fixture(scope="module")
def what_lab_writes(server):
    """The two keys, from the server's kernel spec and a real kernel's kernel_info_reply."""
    spec = server.api("GET", "/api/kernelspecs").json()["kernelspecs"]["python3"]["spec"]
    with kernel_for(server, f"api/{NOTEBOOKS[0]}") as kernel:
        reply, _ = kernel.request("kernel_info_request", {})
    return {"kernelspec": {"name": "python3", "display_name": spec["display_name"], "language": spec["language"]},
            "language_info": reply["content"]["language_info"]}


def test_the_stored_metadata_is_what_lab_writes(what_lab_writes):
    assert lab_metadata() == what_lab_writes


def as_saved_here(stored: bytes, kernel_version: str) -> bytes:
    """The stored file as Lab saves it on this Python. The course stores the Python release of the venv its
    outputs were made on (``language_info.version``, e.g. 3.11.7); a kernel of another release (Debian's
    3.11.2) reports its own, which Lab writes, and so marks the notebook changed on opening. That one
    value is all that may differ."""
    stored_version = json.loads(stored)["metadata"]["language_info"]["version"]
    field = '"version": "{}"\n  }}\n }},\n "nbformat"'
    assert stored.count(field.format(stored_version).encode()) == 1, "language_info.version is not where Lab writes it"
    return stored.replace(field.format(stored_version).encode(), field.format(kernel_version).encode())


@pytest.mark.parametrize("path", params(NOTEBOOKS))
def test_open_and_save_through_the_server_changes_no_byte(path, server, served, what_lab_writes):
    before = (served / "api" / path).read_bytes()
    url = f"/api/contents/api/{path}"
    model = server.api("GET", url, params={"type": "notebook", "content": 1}).json()
    model["content"]["metadata"].update(what_lab_writes)
    server.api("PUT", url, json={"type": "notebook", "format": "json", "content": model["content"]})
    after = (served / "api" / path).read_bytes()
    expected = as_saved_here(before, what_lab_writes["language_info"]["version"])
    assert after == expected, f"saving {path} rewrote it: run `course normalize {path}`"


OPEN_AND_SAVE = """async (path) => {
  const limit = new Promise((_, reject) => setTimeout(() => reject(new Error('no kernel in 120 s: ' + path)), 120000));
  return Promise.race([limit, (async () => {
  const app = window.jupyterapp;
  await app.restored;
  const widget = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await widget.context.ready;
  await widget.sessionContext.ready;
  const kernel = widget.sessionContext.session.kernel;
  await kernel.info;
  await kernel.spec;
  await new Promise(resolve => setTimeout(resolve, 500));  // Lab's own metadata updates follow these promises
  const dirty = widget.context.model.dirty;
  const metadata = {kernelspec: widget.context.model.getMetadata('kernelspec'),
                    language_info: widget.context.model.getMetadata('language_info')};
  await widget.context.save();
  await widget.sessionContext.shutdown();
  widget.dispose();
  return {dirty, metadata};
  })()]);
}"""


@pytest.fixture(scope="module")
def lab_page(server):
    playwright = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM:
        pytest.skip("no Chromium on this machine; as root, `make test` installs Debian's chromium")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{server.url}/lab?token={server.token}")
            page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')",
                                   timeout=120_000)
            yield page
        finally:
            browser.close()


@pytest.mark.parametrize("path", params(["notebooks/01_lesson_goals.ipynb", "exercises/ex01_capture_boundary.ipynb"]))
def test_open_and_save_in_jupyterlab_changes_no_byte(path, lab_page, served):
    before = (served / "lab" / path).read_bytes()
    result = lab_page.evaluate(OPEN_AND_SAVE, f"lab/{path}")
    assert result["metadata"] == lab_metadata()
    here = lab_metadata()["language_info"]["version"]
    other_python = json.loads(before)["metadata"]["language_info"]["version"] != here
    assert result["dirty"] == other_python, (f"Lab marked {path} as changed on opening it" if result["dirty"]
                                             else "Lab should have written this Python's release into language_info")
    assert (served / "lab" / path).read_bytes() == as_saved_here(before, here)
