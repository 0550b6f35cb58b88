"""The ``course`` command line: cheap help, and ``course execute`` on a real notebook."""

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_tools.notebooks.normalize import audit_notebook

ROOT = Path(__file__).resolve().parents[2]
COURSE = Path(sys.executable).parent / "course"


def run(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT, **kwargs)


def test_help_does_not_import_torch():
    code = ("import sys\n"
            "from course_tools.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as exc:\n    code = exc.code\n"
            "print('exit', code)\n"
            "print('torch imported:', 'torch' in sys.modules)\n")
    proc = run([sys.executable, "-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["exit 0", "torch imported: False"]
    assert "course execute NB" in proc.stdout
    assert proc.stderr == ""


def test_package_import_is_lazy():
    proc = run([sys.executable, "-c", "import sys, compile_course; print('torch' in sys.modules)"])
    assert proc.stdout.strip() == "False"
    proc = run([sys.executable, "-c", "import sys, compile_course; compile_course.Case; print('torch' in sys.modules)"])
    assert proc.stdout.strip() == "True"


@pytest.mark.skipif(not COURSE.exists(), reason="the course entry point is not installed in this environment")
def test_console_script_help():
    proc = run([str(COURSE), "--help"])
    assert proc.returncode == 0, proc.stderr
    for command in ("run", "execute", "release", "grade"):
        assert command in proc.stdout
    choices = re.search(r"\{([a-z,-]+)\}", proc.stdout).group(1).split(",")
    assert "run" in choices and "render" not in choices  # the course's one HTML is the site (make site / course run)


def test_there_is_no_render_command():
    proc = run([sys.executable, "-m", "course_tools.cli", "render"])
    assert proc.returncode == 2 and "invalid choice: 'render'" in proc.stderr


def test_unknown_command_fails():
    proc = run([sys.executable, "-m", "course_tools.cli", "no-such-command"])
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def write_notebook(path: Path) -> Path:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [new_markdown_cell("# tmp"), new_code_cell("class A: pass\nprint(A(), 6 * 7)")]
    nbformat.write(nb, path)
    return path


def check_executed(proc, path):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    progress = r"^  \[1/1\] \S+\.ipynb +[0-9.]+ s  ok   \(\d+ s elapsed\)$"
    assert re.search(progress, proc.stdout, re.MULTILINE), proc.stdout
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[1].outputs[0].text == "<__main__.A object at 0xADDRESS> 42\n"
    assert audit_notebook(nb) == []


def test_course_execute_stores_outputs_in_place():
    build = ROOT / "build"
    build.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build, prefix="test-cli-") as tmp:
        path = write_notebook(Path(tmp) / "01_tmp.ipynb")
        proc = run([sys.executable, "-m", "course_tools.cli", "execute", str(path)])
        check_executed(proc, path)
        assert f"build/{Path(tmp).name}/01_tmp.ipynb" in proc.stdout


def test_course_execute_on_a_notebook_outside_the_repo(tmp_path):
    path = write_notebook(tmp_path / "nb.ipynb")
    proc = run([sys.executable, "-m", "course_tools.cli", "execute", str(path)])
    check_executed(proc, path)


def test_course_execute_reports_a_broken_notebook(tmp_path):
    build = ROOT / "build"
    build.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build, prefix="test-cli-") as tmp:
        path = write_notebook(Path(tmp) / "broken.ipynb")
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(new_code_cell("raise RuntimeError('nope')"))
        nbformat.write(nb, path)
        proc = run([sys.executable, "-m", "course_tools.cli", "execute", str(path)])
        assert proc.returncode == 1
        assert "FAILED: CellExecutionError" in proc.stdout


def test_course_execute_prints_a_line_as_each_notebook_finishes_and_out_leaves_sources_alone(tmp_path):
    paths = [write_notebook(tmp_path / f"{n:02d}_tmp.ipynb") for n in (1, 2)]
    nb = nbformat.read(paths[1], as_version=4)
    nb.cells.append(new_code_cell("raise RuntimeError('planned for drift')"))
    nb.cells.append(new_code_cell("print('after the error')"))
    nbformat.write(nb, paths[1])
    before = [p.read_bytes() for p in paths]
    proc = run([sys.executable, "-m", "course_tools.cli", "execute", "--jobs", "2", "--allow-errors",
                "--out", str(tmp_path / "out"), *map(str, paths)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("  [")]
    assert [ln.split("]")[0] for ln in lines] == ["  [1/2", "  [2/2"]
    assert sorted(ln.split()[1].rsplit("/", 1)[-1] for ln in lines) == ["01_tmp.ipynb", "02_tmp.ipynb"]
    assert all(re.search(r" s  ok   \(\d+ s elapsed\)$", ln) for ln in lines), lines
    assert [p.read_bytes() for p in paths] == before
    ran = nbformat.read(tmp_path / "out" / "02_tmp.ipynb", as_version=4)
    assert ran.cells[2].outputs[0].ename == "RuntimeError"
    assert ran.cells[3].outputs[0].text == "after the error\n"


def test_course_normalize_rewrites_only_the_notebook_metadata(tmp_path, capsys):
    from course_tools.cli import main
    from course_tools.notebooks.normalize import apply_lab_metadata, lab_metadata

    path = write_notebook(tmp_path / "nb.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept as is\n")]
    nb.cells[1].execution_count = 7
    nbformat.write(nb, path)
    before = path.read_bytes()
    assert main(["normalize", "--check", str(path)]) == 1
    assert "needs normalizing" in capsys.readouterr().out and path.read_bytes() == before
    assert main(["normalize", str(path)]) == 0
    after = json.loads(path.read_text())
    assert {k: after["metadata"][k] for k in ("kernelspec", "language_info")} == lab_metadata()
    assert after["cells"][1]["outputs"] == [{"name": "stdout", "output_type": "stream", "text": ["kept as is\n"]}]
    assert after["cells"][1]["execution_count"] == 7
    assert not apply_lab_metadata(nbformat.read(path, as_version=4))  # nothing left to change


@pytest.mark.parametrize("columns", [60, 100])
def test_course_run_summary_fits_the_terminal(columns, monkeypatch, capsys):
    from course_tools.cli import print_summary

    monkeypatch.setenv("COLUMNS", str(columns))
    print_summary([("lessons executed", "8/8 ok", "build/executed/" + "x" * 80), ("HTML pages", "8 + index", "y")])
    printed = capsys.readouterr().out
    assert max(len(line) for line in printed.splitlines()) <= columns, printed
    assert "lessons executed" in printed and "x" * 20 in printed


def test_course_run_never_overwrites_answers_typed_into_exercises(monkeypatch, capsys, tmp_path):
    """`make course` with a student's answers in exercises/: the release step stops and names the file,
    the other steps still run, and the run fails (the release itself is tested in test_release.py)."""
    import argparse

    from course_grader.exercise import release
    from course_tools import cli
    from course_tools.site import build as site_build

    answered = tmp_path / "ex02_diagnose.ipynb"

    def refuse(*args, **kwargs):
        raise release.ChangedByHand([answered])

    class Samples:
        def __init__(self, jobs):
            pass

        def result(self):
            return "8 of the 70 samples, one of each kind: 8 as expected", True, 1.0

        def stop(self):
            pass

    monkeypatch.setattr(cli, "_execute_many", lambda paths, out, jobs, **kw: [(p, 1.0, "ok") for p in paths])
    monkeypatch.setattr(release, "release_all", refuse)
    monkeypatch.setattr(cli, "SampleGrading", Samples)
    monkeypatch.setattr(site_build, "build_site", lambda out: cli.ROOT / "build" / "site" / "index.html")
    assert cli.cmd_run(argparse.Namespace(jobs=1)) == 1
    out = capsys.readouterr().out
    assert "ex02_diagnose.ipynb changed since the last release" in out and "NOT DONE" in out
    assert "course site" in out and "sample grading" in out      # the other steps still ran


@pytest.mark.parametrize("warm, kernel", [("1", "course-warm"), ("0", "python3")])
def test_course_run_grades_the_samples_beside_the_lessons_in_warm_kernels(monkeypatch, capsys, warm, kernel):
    """The sample grading starts before the lessons and is waited for after them; the lessons' kernels come
    from the warm spec (found on JUPYTER_PATH only meanwhile), or are ordinary with COURSE_WARM_KERNELS=0."""
    import argparse
    import os

    from course_grader.exercise import release
    from course_tools import cli
    from course_tools.site import build as site_build

    events = []

    class Samples:
        def __init__(self, jobs):
            events.append("grading started")

        def result(self):
            events.append("grading awaited")
            return "8 of the 70 samples, one of each kind: 8 as expected", True, 1.0

        def stop(self):
            events.append("grading stopped")

    def lessons(paths, out, jobs, kernel_name="python3", **kw):
        found = kernel_name == "python3" or any(
            (Path(folder) / "kernels" / kernel_name / "kernel.json").is_file()
            for folder in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if folder)
        events.append(("lessons", kernel_name, found))
        return [(p, 1.0, "ok") for p in paths]

    monkeypatch.setenv("COURSE_WARM_KERNELS", warm)
    monkeypatch.setenv("COLUMNS", "200")      # the summary is a table as wide as the terminal: no folded cell
    before = os.environ.get("JUPYTER_PATH")
    monkeypatch.setattr(cli, "_execute_many", lessons)
    monkeypatch.setattr(release, "release_all", lambda *a, **k: [])
    monkeypatch.setattr(cli, "SampleGrading", Samples)
    monkeypatch.setattr(site_build, "build_site", lambda out: cli.ROOT / "build" / "site" / "index.html")
    assert cli.cmd_run(argparse.Namespace(jobs=2)) == 0
    assert events == ["grading started", ("lessons", kernel, True), "grading awaited"]
    assert os.environ.get("JUPYTER_PATH") == before
    assert "8 as expected" in capsys.readouterr().out


# ---------------------------------------------------------------- output for logs as well as terminals

@pytest.mark.parametrize("argv, prefix", [
    (["grade", "run", "subs", "--unconfine"], "--unconfine"),          # a prefix of the flag that weakens the sandbox
    (["grade", "run", "subs", "--exer", "ex01"], "--exer"),
    (["check", "x.ipynb", "--sol", "s"], "--sol"),
    (["submit", "x.ipynb", "--student", "ada", "--ou", "d"], "--ou"),
    (["release", "--che"], "--che"),
    (["workspace", "--refr", "x"], "--refr"),
    (["execute", "x.ipynb", "--ou", "d"], "--ou"),
    (["run", "--job", "1"], "--job"),
    (["drift", "--torch", "2.13.0", "--job", "1"], "--job"),
    (["new-exercise", "ex99", "slug", "T", "--sol", "s"], "--sol"),
])
def test_no_command_takes_an_abbreviated_flag(argv, prefix, capsys):
    from course_tools.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err


@pytest.mark.parametrize("module, argv, prefix", [
    ("course_tools.interpreter", ["--desc"], "--desc"),          # the set-up's check, run by path by make
    ("course_tools.module_table", ["--wri"], "--wri"),           # would rewrite docs/grader-design.md
])
def test_no_tool_takes_an_abbreviated_flag(module, argv, prefix, capsys):
    import importlib

    with pytest.raises(SystemExit) as exc:
        importlib.import_module(module).main(argv)
    assert exc.value.code == 2
    assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err


def parsers_taking_abbreviations(path: Path) -> list[int]:
    """Lines of ``path`` that make an ``argparse.ArgumentParser`` without ``allow_abbrev=False``: as a keyword,
    or set on the parser in the function that makes it (``parser.allow_abbrev = False``)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def enclosing(node, kinds):
        while node in parent and not isinstance(node, kinds):
            node = parent[node]
        return node

    def refused_in(scope, name: str) -> bool:
        return any(isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "allow_abbrev" and isinstance(t.value, ast.Name)
            and t.value.id == name for t in n.targets) and isinstance(n.value, ast.Constant) and n.value.value is False
            for n in ast.walk(scope))

    lines = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", None))
                == "ArgumentParser"):
            continue
        if any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant) and k.value.value is False
               for k in call.keywords):
            continue
        statement = enclosing(call, ast.stmt)
        scope = enclosing(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))
        named = [t.id for t in getattr(statement, "targets", []) if isinstance(t, ast.Name)]
        if not any(refused_in(scope, name) for name in named):
            lines.append(call.lineno)
    return lines


def test_every_argument_parser_refuses_abbreviated_flags():
    """A prefix of a flag (``--desc`` for ``--describe``, ``--unconfine`` for ``--unconfined``) is an error in
    every command line of the checkout, not only in ``course``'s own subcommands."""
    paths = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))
    found = {str(p.relative_to(ROOT)): lines for p in paths
             if "ArgumentParser" in p.read_text(encoding="utf-8") and (lines := parsers_taking_abbreviations(p))}
    assert found == {}, f"ArgumentParser without allow_abbrev=False (file: lines): {found}"


def test_a_table_in_a_log_keeps_each_row_on_one_line(monkeypatch, capsys):
    """Off a terminal (capsys is a pipe) and without COLUMNS, nothing is folded at 80 columns."""
    from course_tools.cli import print_summary

    monkeypatch.delenv("COLUMNS", raising=False)
    where = "build/samples-grading/feedback/" + "deep/" * 30 + "index.html"
    print_summary([("sample grading", "85 samples: 85 as expected, 40 s", where)])
    printed = capsys.readouterr().out
    assert where in printed, printed          # the whole path on one line
    assert sum("sample grading" in line for line in printed.splitlines()) == 1


def test_ctrl_c_prints_one_line_that_says_how_to_go_on(tmp_path):
    """A real `course execute` interrupted while a cell runs: one line, no traceback, exit 130."""
    import os
    import signal
    import time

    path, running = tmp_path / "slow.ipynb", tmp_path / "running"
    nbformat.write(new_notebook(cells=[new_code_cell(f"import pathlib, time\npathlib.Path({str(running)!r}).touch()\n"
                                                     "time.sleep(120)")]), path)
    # A shell without job control starts background commands with SIGINT ignored, and Python keeps an ignored
    # SIGINT ignored: give the command the default, as a terminal's foreground command has it.
    proc = subprocess.Popen([str(COURSE), "execute", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = proc.stdout.readline()              # "running 1 notebook(s) ..."
        assert "running 1 notebook" in first
        deadline = time.monotonic() + 300            # the kernel starts and runs the cell: it says so
        while not running.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert running.exists(), "the cell never started"
        os.killpg(proc.pid, signal.SIGINT)           # what Ctrl-C sends: the whole foreground group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    said = [line for line in err.splitlines() if line.strip()]
    assert said[-1] == "course execute: interrupted (Ctrl-C); run the same command again to start it over", err
    from course_grader.ui.terminal import interrupted_line

    assert "resume" in interrupted_line("grade")
