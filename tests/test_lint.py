"""Ruff is clean under the project's own configuration ([tool.ruff] in pyproject.toml)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "solutions" / "ex04_comparison_fixture.ipynb"   # has the `start; start()` header
MODULE = ROOT / "src" / "compile_course" / "comparison.py"


def ruff_check(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The venv's ruff, run from `cwd` so that it reads the pyproject.toml found there."""
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def assert_clean(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"ruff check found problems:\n{result.stdout}{result.stderr}"


def test_the_tree_is_clean():
    assert_clean(ruff_check())


def test_the_configuration_covers_the_notebooks_and_skips_generated_and_broken_files():
    listed = ruff_check("--show-files")
    assert listed.returncode == 0, listed.stderr
    files = {Path(line).relative_to(ROOT).as_posix() for line in listed.stdout.splitlines() if line.strip()}
    notebooks = {p.relative_to(ROOT).as_posix() for d in ("notebooks", "solutions") for p in (ROOT / d).glob("*.ipynb")}
    assert notebooks and notebooks <= files
    for folder in ("src/compile_course", "src/course_grader", "tests", "scripts", "site"):
        assert any(f.startswith(folder + "/") for f in files), folder
    skipped = ("exercises/", "tests/samples/submissions/", "build/", ".venv/")
    assert list((ROOT / "exercises").glob("*.ipynb")) and list((ROOT / "tests/samples/submissions").glob("*.ipynb"))
    assert [f for f in files if f.startswith(skipped)] == []


def _project_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A throwaway project with this configuration, one solution notebook and one module."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "solutions").mkdir()
    (tmp_path / "src" / "compile_course").mkdir(parents=True)
    notebook = tmp_path / "solutions" / NOTEBOOK.name
    module = tmp_path / "src" / "compile_course" / MODULE.name
    shutil.copy(NOTEBOOK, notebook)
    shutil.copy(MODULE, module)
    return notebook, module


def test_an_unused_import_in_a_module_fails_the_check(tmp_path):
    _, module = _project_copy(tmp_path)
    assert_clean(ruff_check(cwd=tmp_path))
    module.write_text(module.read_text() + "\n\ndef _helper():\n    import os\n")
    result = ruff_check(cwd=tmp_path)
    assert result.returncode == 1
    assert "F401" in result.stdout and "comparison.py" in result.stdout, result.stdout


def test_an_unused_import_in_a_notebook_cell_fails_the_check(tmp_path):
    notebook, _ = _project_copy(tmp_path)
    nb = json.loads(notebook.read_text())
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    setup["source"] = [*setup["source"], "\nimport shutil\n"]
    notebook.write_text(json.dumps(nb, indent=1))
    result = ruff_check(cwd=tmp_path)
    assert result.returncode == 1
    assert "F401" in result.stdout and "shutil" in result.stdout and NOTEBOOK.name in result.stdout, result.stdout
