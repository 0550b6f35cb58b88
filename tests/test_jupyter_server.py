"""A real Jupyter server from this venv runs a lesson's first code cell with the course's own package."""

import json
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import nbformat
import pytest

from lab_server import jupyter_server, kernel_for

ROOT = Path(__file__).resolve().parents[1]
LESSON = "notebooks/01_lesson_goals.ipynb"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with jupyter_server(ROOT, tmp_path_factory.mktemp("jupyter-state")) as running:
        yield running


def first_code_cell(path: Path):
    return next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def test_the_server_offers_the_course_kernel(server):
    specs = server.api("GET", "/api/kernelspecs").json()
    assert specs["default"] == "python3"
    assert "python3" in specs["kernelspecs"]


def test_a_lesson_cell_runs_on_the_course_venv_and_package(server):
    cell = first_code_cell(ROOT / LESSON)
    with kernel_for(server, LESSON) as kernel:
        reply, printed = kernel.execute(cell.source)
        assert reply["status"] == "ok", reply
        # The lesson's start() names the torch it runs on: this venv's.
        python = f"{sys.version_info.major}.{sys.version_info.minor}"   # the venv's own: 3.11 to 3.13
        assert printed.startswith(f"torch {version('torch').split('+')[0]} | python {python}"), printed
        reply, printed = kernel.execute(
            "import json, os, sys, compile_course\n"
            "print(json.dumps({'package': compile_course.__file__, 'python': sys.executable, 'cwd': os.getcwd()}))")
        assert reply["status"] == "ok", reply
    where = json.loads(printed)
    assert Path(where["package"]) == ROOT / "src" / "compile_course" / "__init__.py"
    assert where["python"] == sys.executable  # the venv's python, not the interpreter it links to
    assert Path(where["cwd"]) == ROOT / "notebooks"  # the kernel starts next to the notebook, as in Lab


def lesson_links(lessons: Path) -> set[Path]:
    """Every file a lesson links to (lessons, exercises, the student guide), resolved from the lesson's folder."""
    targets = set()
    for lesson in sorted(lessons.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(lesson, as_version=4).cells:
            if cell.cell_type == "markdown":
                for link in re.findall(r"\]\(([^)#\s:]+\.(?:ipynb|md))", cell.source):
                    targets.add((lesson.parent / link).resolve())
    return targets


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_the_workspace_so_every_lesson_link_opens(tmp_path_factory):
    """`make lab` runs `course lab`, which serves the student's workspace: every link of every lesson
    (to another lesson, an exercise, the student guide) opens there through a real server."""
    from compile_course import workspace
    from course_tools import lab

    dry_run = subprocess.run(["make", "-n", "lab", "LAB_ARGS=--port 8899"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60).stdout
    assert re.search(r"/course lab --port 8899$", dry_run, re.M), dry_run
    work = tmp_path_factory.mktemp("workspace") / "work"
    workspace.sync(work)
    command = lab.lab_command(work, [])
    assert f"--ServerApp.root_dir={work}" in command
    links = lesson_links(work / "notebooks")
    assert {p.parent.name for p in links} >= {"notebooks", "exercises", "docs"}, links
    with jupyter_server(work, tmp_path_factory.mktemp("jupyter-state")) as served:
        for target in sorted(links):
            relative = target.relative_to(work)  # raises if Lab could not reach it from its root
            model = served.api("GET", f"/api/contents/{relative.as_posix()}", params={"content": 0}).json()
            assert model["type"] == ("notebook" if target.suffix == ".ipynb" else "file"), relative
