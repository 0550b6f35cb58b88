"""The drift report's comparison and classification, on two small synthetic notebooks (no second venv)."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course_tools.drift.compare import BuildFacts, ChangeKind, compare_notebooks, is_compared
from course_tools.drift.environment import other_constraints, other_pins, torch_requirement
from course_tools.drift.report import totals, write_html, write_json

PINNED = BuildFacts(version="2.14.1+cu130", git_version="5c4886908584aaaa1111bbbb2222cccc3333dddd", cuda="13.0")
OLDER = BuildFacts(version="2.13.0+cpu", git_version="0123456789abcdef0123456789abcdef01234567", cuda=None)


def stdout(text):
    return new_output("stream", name="stdout", text=text)


def error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def code(outputs, tags=(), source="pass", execution_count=1):
    cell = new_code_cell(source, execution_count=execution_count, outputs=list(outputs))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def notebook(torch_version: str, exception: str, warning: bool, cuda: str = "13.0"):
    """One lesson as it prints under a given torch: version lines, a table, volatile timings."""
    start = f"torch {torch_version.split('+')[0]} | python 3.11 | cpu\n"
    if warning:
        start += "WARNING: outputs were recorded with torch 2.14.1; yours may differ.\n"
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# A lesson"),
        code([stdout(start)], source="start()"),                                       # 1 version line
        code([stdout(f"torch wheel   {torch_version}\n")], source="print(boundary)"),  # 2 version table
        code([stdout(f"float16 | {exception}\nint64   | ok\n")], source="compare(f)"),  # 3 behaviour
        code([stdout("first call 249 ms\n")], tags=["nbval-ignore-output"]),         # 4 not compared
        code([stdout(f"built with CUDA {cuda}\n")], tags=["version-report"]),         # 5 tagged
        code([stdout("7/7 cases agree\n")]),                                         # 6 unchanged
        code([error("RuntimeError", "planned")], tags=["raises-exception"]),          # 7 unchanged error
        code([], execution_count=None),                                              # 8 never run: not compared
    ]
    return nb


@pytest.fixture
def pinned_and_older():
    stored = notebook("2.14.1+cu130", "RecompileError", warning=False)
    rerun = notebook("2.13.0+cpu", "RuntimeError", warning=True, cuda="12.6")
    return stored, rerun


def test_compared_cells_follow_nbval(pinned_and_older):
    stored, _ = pinned_and_older
    assert [i for i, c in enumerate(stored.cells) if is_compared(c)] == [1, 2, 3, 5, 6, 7]
    skip = code([stdout("x")], source="# NBVAL_SKIP\nx")
    assert not is_compared(skip)


def test_version_lines_are_separated_from_a_behaviour_change(pinned_and_older):
    stored, rerun = pinned_and_older
    result = compare_notebooks("notebooks/01_x.ipynb", stored, rerun, [PINNED, OLDER], pin="2.14.1")
    assert result.compared == 6 and result.error == ""
    kinds = {c.cell: c.kind for c in result.changes}
    assert kinds == {1: ChangeKind.VERSION_REPORT, 2: ChangeKind.VERSION_REPORT,
                     3: ChangeKind.BEHAVIOUR, 5: ChangeKind.VERSION_REPORT}
    reasons = {c.cell: c.reason for c in result.changes}
    assert reasons[1] == "only lines that name a build were added or removed"
    assert reasons[2] == "equal once the builds' versions are masked"
    assert reasons[5] == "tagged version-report"
    behaviour = next(c for c in result.changes if c.cell == 3)
    assert behaviour.diff.splitlines()[2:] == ["@@ -1,3 +1,3 @@", " [stdout]",
                                               "-float16 | RecompileError", "+float16 | RuntimeError", " int64   | ok"]


def test_a_changed_number_next_to_a_version_is_behaviour():
    stored = new_notebook(cells=[code([stdout("torch 2.14.1: 2 graph breaks\n")])])
    rerun = new_notebook(cells=[code([stdout("torch 2.13.0: 3 graph breaks\n")])])
    [change] = compare_notebooks("nb", stored, rerun, [PINNED, OLDER]).changes
    assert change.kind == ChangeKind.BEHAVIOUR


def test_sanitized_and_skipped_parts_do_not_count():
    stored = new_notebook(cells=[code([stdout("<A object at 0x7f00aa>\n"), stdout("same\n")])])
    rerun = new_notebook(cells=[code([stdout("<A object at 0x7f99bb>\nsame\n")])])  # merged streams, new address
    img = code([new_output("display_data", data={"image/png": "AAAA", "text/plain": "<Figure>"})])
    img2 = code([new_output("display_data", data={"image/png": "BBBB", "text/plain": "<Figure>"})])
    stored.cells.append(img)
    rerun.cells.append(img2)
    assert compare_notebooks("nb", stored, rerun, [PINNED, OLDER]).changes == []


def test_a_reference_run_isolates_torch_and_flags_stale_stored_outputs(pinned_and_older):
    stored, rerun = pinned_and_older
    reference = notebook("2.14.1+cu130", "RecompileError", warning=False)
    reference.cells[6].outputs = [stdout("6/7 cases agree\n")]  # the code changed since outputs were stored
    rerun.cells[6].outputs = [stdout("6/7 cases agree\n")]
    result = compare_notebooks("nb", stored, rerun, [PINNED, OLDER], pin="2.14.1", reference=reference)
    assert result.stale == [6]
    assert 6 not in {c.cell for c in result.changes}
    assert {c.cell for c in result.changes if c.kind == ChangeKind.BEHAVIOUR} == {3}


def test_a_changed_cell_count_is_reported_not_compared(pinned_and_older):
    stored, rerun = pinned_and_older
    rerun.cells.append(code([stdout("new\n")]))
    result = compare_notebooks("nb", stored, rerun, [PINNED, OLDER])
    assert result.changes == [] and "cell count changed" in result.error


def test_reports_carry_the_same_figures(pinned_and_older, tmp_path):
    stored, rerun = pinned_and_older
    results = [compare_notebooks("notebooks/01_x.ipynb", stored, rerun, [PINNED, OLDER], pin="2.14.1")]
    assert totals(results) == {"notebooks": 1, "compared_cells": 6, "changed_cells": 4, "version_report": 3,
                               "behaviour": 1, "failed_notebooks": [], "stale_cells": 0}
    write_json(results, tmp_path / "report.json", "2.14.1+cu130", "2.13.0+cpu")
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["summary"]["changed_cells"] == 4 and data["candidate_torch"] == "2.13.0+cpu"
    kinds = [c["kind"] for c in data["notebooks"][0]["changes"]]
    assert kinds == ["version-report"] * 2 + ["behaviour", "version-report"]
    write_html(results, tmp_path / "report.html", "2.14.1+cu130", "2.13.0+cpu")
    page = (tmp_path / "report.html").read_text()
    assert "4 of 6 compared cells changed" in page
    assert page.index("RuntimeError") < page.index("torch wheel")  # behaviour changes come first
    assert "http://" not in page and "https://" not in page  # no CDN: it opens offline


def test_torch_requirement_accepts_a_version_or_a_wheel(tmp_path):
    assert torch_requirement("2.13.0") == ("torch==2.13.0", "2.13.0")
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"")
    assert torch_requirement(str(wheel)) == (str(wheel), "2.13.0+cpu")
    with pytest.raises(ValueError):
        torch_requirement("2.13; rm -rf /")
    with pytest.raises(FileNotFoundError):
        torch_requirement(str(tmp_path / "torch-9.9.9-none.whl"))
    assert "torch==" not in other_pins() and "jupyterlab==" in other_pins()


def test_the_drift_venv_installs_with_the_lock_but_not_its_torch_family(tmp_path, monkeypatch):
    import subprocess

    import course_tools.drift.environment as environment

    commands = []
    monkeypatch.setattr(environment, "venv_dir", lambda label: tmp_path / f"drift-venv-{label}")
    monkeypatch.setattr(environment, "ROOT", tmp_path)
    monkeypatch.setattr(environment, "_run", lambda command, what: commands.append([str(c) for c in command]))
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=f"{site}\n"))
    (tmp_path / "drift-venv-2.13.0" / "bin").mkdir(parents=True)
    (tmp_path / "drift-venv-2.13.0" / "bin" / "python").touch()
    venv, label = environment.build_venv("2.13.0")
    assert label == "2.13.0" and commands[-1][-5:-3] == ["torch==2.13.0", "-r"] and commands[-1][-2] == "-c"
    constraints = (venv / "constraints-other.txt").read_text()
    assert constraints == other_constraints()
    names = {line.split("==")[0] for line in constraints.splitlines() if "==" in line}
    assert "jinja2" in names and "sympy" in names and "filelock" in names
    assert not [n for n in names if n in ("torch", "triton") or n.startswith(("nvidia-", "cuda-"))]
    assert (site / "compile_course_checkout.pth").read_text().strip().endswith("src")
    assert constraints in (venv / ".drift-installed").read_text()   # a new lock rebuilds the drift venv


def test_runs_are_compared_on_a_snapshot_and_a_missing_run_is_reported(tmp_path):
    from course_tools.drift.cli import compare_all, snapshot

    source = tmp_path / "course" / "notebooks"
    source.mkdir(parents=True)
    stored = notebook("2.14.1+cu130", "RecompileError", warning=False)
    nbformat.write(stored, source / "01_x.ipynb")
    nbformat.write(stored, source / "02_y.ipynb")
    copies = snapshot([source / "01_x.ipynb", source / "02_y.ipynb"], tmp_path / "drift" / "source")
    nbformat.write(new_notebook(cells=[new_markdown_cell("edited meanwhile")]), source / "01_x.ipynb")
    assert nbformat.read(copies[0], as_version=4) == stored  # the copy, not the edited file, is compared
    for run, torch_version, exception in (("candidate", "2.13.0+cpu", "RuntimeError"),
                                          ("reference", "2.14.1+cu130", "RecompileError")):
        (tmp_path / run / "notebooks").mkdir(parents=True)
        nbformat.write(notebook(torch_version, exception, warning=run == "candidate"),
                       tmp_path / run / "notebooks" / "01_x.ipynb")
    results = compare_all(copies, tmp_path / "candidate", tmp_path / "reference", [PINNED, OLDER], "2.14.1")
    assert [r.notebook for r in results] == ["notebooks/01_x.ipynb", "notebooks/02_y.ipynb"]
    assert totals(results)["behaviour"] == 1 and results[0].stale == []
    assert results[1].error.startswith("no re-run notebook")


def test_the_table_shows_the_line_that_changed_not_a_re_padded_one():
    from course_tools.drift.report import _changed_lines

    diff = "\n".join(["--- before", "+++ after", "@@ -1,3 +1,3 @@",
                      "-case   | output                         | ok", "-------+--------------------------------+---",
                      "-bool   | both raise NotImplementedError | ok",
                      "+case   | output                  | ok", "+-------+-------------------------+---",
                      "+bool   | both raise RuntimeError | ok"])
    assert _changed_lines(diff).splitlines() == ["-bool   | both raise NotImplementedError | ok",
                                                 "+bool   | both raise RuntimeError | ok",
                                                 "... 4 more changed line(s)"]


def test_a_python_version_is_masked_like_a_torch_version():
    """The same torch on another Python: start()'s line and the boundary table's rows only report the build."""
    on_311 = BuildFacts(version="2.14.1+cu130", python="3.11.7")
    on_312 = BuildFacts(version="2.14.1+cu130", python="3.12.1")
    stored = new_notebook(cells=[code([stdout("kernel: python 3.11 on linux\n")]),
                                 code([stdout("python (full) 3.11.7\nsite  /venv/lib/python3.11/site-packages\n")]),
                                 code([stdout("python 3.11: 2 graph breaks\n")])])
    rerun = new_notebook(cells=[code([stdout("kernel: python 3.12 on linux\n")]),
                                code([stdout("python (full) 3.12.1\nsite  /venv/lib/python3.12/site-packages\n")]),
                                code([stdout("python 3.12: 3 graph breaks\n")])])
    result = compare_notebooks("nb", stored, rerun, [on_311, on_312], pin="2.14.1")
    assert {c.cell: c.kind for c in result.changes} == {0: ChangeKind.VERSION_REPORT, 1: ChangeKind.VERSION_REPORT,
                                                        2: ChangeKind.BEHAVIOUR}
    assert on_312.name() == "torch 2.14.1+cu130 on Python 3.12.1" and OLDER.name() == "torch 2.13.0+cpu"


def test_the_report_names_the_python_of_each_build(pinned_and_older, tmp_path):
    stored, rerun = pinned_and_older
    results = [compare_notebooks("notebooks/01_x.ipynb", stored, rerun, [PINNED, OLDER], pin="2.14.1")]
    reference = BuildFacts(version="2.14.1+cu130", python="3.11.7")
    candidate = BuildFacts(version="2.14.1+cu130", python="3.12.1")
    write_json(results, tmp_path / "report.json", reference, candidate)
    data = json.loads((tmp_path / "report.json").read_text())
    assert (data["reference_python"], data["candidate_python"]) == ("3.11.7", "3.12.1")
    assert data["candidate_torch"] == "2.14.1+cu130" and data["candidate"] == "torch 2.14.1+cu130 on Python 3.12.1"
    write_html(results, tmp_path / "report.html", reference, candidate)
    page = (tmp_path / "report.html").read_text()
    assert "<h1>What changes under torch 2.14.1+cu130 on Python 3.12.1</h1>" in page
    assert "torch 2.14.1+cu130 on Python 3.12.1 vs torch 2.14.1+cu130 on Python 3.11.7: 4 of 6" in page


def test_a_drift_venv_from_another_python_lives_outside_the_checkout_with_the_whole_lock(tmp_path, monkeypatch):
    import subprocess

    import course_tools.drift.environment as environment
    from compile_course.paths import REQUIREMENTS, ROOT

    commands = []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(environment, "python_facts", lambda python: ("CPython", "3.12.1", "/opt/py312"))
    monkeypatch.setattr(environment, "_run", lambda command, what: commands.append([str(c) for c in command]))
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=f"{site}\n"))
    venv, label = environment.build_venv(None, "/opt/py312/bin/python3")
    assert label == "python-3.12.1" and venv == tmp_path / "cache" / "compile-course" / "drift" / "venv-python-3.12.1"
    assert not venv.is_relative_to(ROOT)
    assert commands[0] == ["/opt/py312/bin/python3", "-m", "venv", str(venv)]      # made by that interpreter
    assert commands[1][-1].startswith("pip==")                                      # the course's pip
    install = commands[-1]
    assert install[-4] == "-r" and install[-2] == "-c" and not any(c.startswith("torch==") for c in install)
    assert (venv / "requirements-other.txt").read_text() == REQUIREMENTS.read_text()  # the pinned torch with it
    assert (venv / "constraints-other.txt").read_text() == environment.LOCK.read_text()  # the whole lock
    assert (venv / ".drift-installed").read_text().startswith("CPython 3.12.1 /opt/py312\n")
    assert (site / "compile_course_checkout.pth").read_text().strip().endswith("src")
    commands.clear()
    assert environment.build_venv(None, "/opt/py312/bin/python3") == (venv, label) and commands == []   # reused
    venv, label = environment.build_venv("2.13.0", "/opt/py312/bin/python3")
    assert label == "python-3.12.1-torch-2.13.0" and commands[-1][-5:-3] == ["torch==2.13.0", "-r"]


def test_an_interpreter_the_set_up_refuses_is_refused_before_pip(tmp_path, monkeypatch, capsys):
    import sys

    import course_tools.drift.cli as cli
    import course_tools.drift.environment as environment

    fake = tmp_path / "python3.10"   # answers like a Python 3.10 would: the set-up's check refuses it
    fake.write_text("#!/bin/sh\nif [ \"$1\" = -c ]; then echo 'CPython 3.10.13 /opt/py310'; exit 0; fi\n"
                    "echo 'set-up: /opt/py310/bin/python3 (3.10.13) will not do: it is Python 3.10.13; "
                    "the course supports CPython 3.11.2 to 3.13' >&2; exit 2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(environment, "_run", lambda command, what: pytest.fail(f"ran {command}"))
    with pytest.raises(environment.InterpreterRefused, match="the course supports CPython 3.11.2 to 3.13"):
        environment.python_facts(str(fake))
    assert cli.main(["--python", str(fake)]) == 2
    assert "course drift: set-up:" in capsys.readouterr().err
    assert environment.python_facts(sys.executable)[1] == __import__("platform").python_version()
    with pytest.raises(environment.InterpreterRefused, match="does not run"):
        environment.python_facts(str(tmp_path / "no-such-python"))
    with pytest.raises(SystemExit) as usage:
        cli.main([])
    assert usage.value.code == 2


@pytest.mark.skipif(__import__("shutil").which("make") is None, reason="make is not installed")
def test_make_drift_python_re_runs_on_that_python_and_keeps_the_venv_s_own(tmp_path):
    """`make drift PYTHON=X`: X goes to course drift --python; .venv, the reference, is checked with its own Python."""
    import os
    import subprocess

    from compile_course.paths import ROOT

    other = "/opt/py312/bin/python3"
    # under `make test` the outer make's command line (PYTHON=..., JOBS=...) reaches these makes in MAKEFLAGS
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "-n", "-o", ".venv/.installed",
                           "drift", "python-check", f"PYTHON={other}"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.endswith(f'course drift  --python "{other}" --jobs 2') for line in lines), done.stdout
    check = next(line for line in lines if "interpreter.py --venv" in line)
    assert not check.startswith(other)
    both = subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "-n", "-o", ".venv/.installed",
                           "drift", f"PYTHON={other}", "TORCH=2.13.0"], capture_output=True, text=True, env=env).stdout
    assert f'course drift --torch "2.13.0" --python "{other}" --jobs 2' in both
    none = subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "-o", ".venv/.installed", "drift"],
                          capture_output=True, text=True, env=env)
    assert none.returncode != 0 and "PYTHON=<another interpreter>" in none.stdout
