"""The Makefile's set-up: the venv step refuses to start without the disk space it needs, the browser
step stops CI when chromium cannot be installed, and make runs Python with its bytecode cache on."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Where nothing can be created: were the check gone, `python -m venv` would fail here at once
# instead of this test installing a venv.
NOWHERE = "/proc/course-setup-test/.venv"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_set_up_stops_first_when_the_disk_is_too_full():
    done = subprocess.run(["make", "-C", str(ROOT), f"VENV={NOWHERE}", f"SETUP_GIB={10**6}", f"{NOWHERE}/.installed"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "not enough disk space to set up" in done.stderr and "GiB free here" in done.stderr, done.stderr
    assert "-m venv" not in done.stdout                # it stopped before creating anything


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("ci, code, said", [
    ("true", 2, "could not install chromium, and CI runs the browser tests: stopping"),
    ("", 0, "could not install chromium: the browser tests will be skipped"),
])
def test_a_failed_chromium_install_stops_ci_and_only_warns_elsewhere(ci, code, said):
    if os.geteuid() != 0:
        pytest.skip("the browser step installs only as root")
    done = subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "browser",
                           "CHROMIUM=/nonexistent/chromium", "APT_GET=false"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "CI": ci})
    assert done.returncode == code, done.stdout + done.stderr
    assert said in done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_runs_python_with_its_bytecode_cache_on():
    """A machine that sets PYTHONDONTWRITEBYTECODE does not pass it to what make runs."""
    probe = 'course-probe-env: ; @echo "[$$PYTHONDONTWRITEBYTECODE]"'
    done = subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "--eval", probe, "course-probe-env"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------- the interpreter check (before pip starts)

def test_the_supported_range_is_3_11_2_to_3_13():
    from course_tools.interpreter import version_problem

    for ok in ((3, 11, 2), (3, 11, 7), (3, 12, 0), (3, 13, 9)):
        assert version_problem("CPython", ok) is None, ok
    for out in ((3, 10, 13), (3, 11, 1), (3, 14, 0)):
        assert "the course supports CPython 3.11.2 to 3.13" in version_problem("CPython", out), out
    assert "PyPy" in version_problem("PyPy", (3, 11, 9))


def test_pyproject_allows_the_range_the_set_up_checks():
    import tomllib

    from course_tools.interpreter import BELOW, OLDEST

    with open(ROOT / "pyproject.toml", "rb") as fh:
        requires = tomllib.load(fh)["project"]["requires-python"]
    assert requires == f">={'.'.join(map(str, OLDEST))},<{'.'.join(map(str, BELOW))}"


def interpreters_here() -> list[str]:
    """Every CPython on this machine the test can try: Debian's and pyenv's (pyenv's only where this user may
    enter root's home: an ordinary user's run tries Debian's alone)."""
    found = {str(p) for p in Path("/usr/bin").glob("python3.[0-9]*") if re.fullmatch(r"python3\.\d+", p.name)}
    try:
        found |= {str(p) for p in Path("/root/.pyenv/versions").glob("*/bin/python")}
    except PermissionError:
        pass
    found = {p for p in found if os.access(p, os.X_OK)}
    return sorted(found)


def make_check(python: str, venv: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "python-check", f"PYTHON={python}",
                           f"VENV={venv}"], capture_output=True, text=True, timeout=120)


def identity_of(python: str) -> tuple[str, tuple[int, ...]]:
    out = subprocess.run([python, "-c", "import platform; print(platform.python_implementation(), "
                          "platform.python_version())"], capture_output=True, text=True, timeout=60).stdout.split()
    return out[0], tuple(int(p) for p in out[1].split(".")[:3] if p.isdigit())


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_checks_each_interpreter_here_before_pip(tmp_path):
    """Each Python on this machine: make's check accepts it, or refuses naming its version and the supported range,
    before a venv exists."""
    from course_tools.interpreter import version_problem

    tried = interpreters_here()
    if not tried:
        pytest.skip("no other CPython on this machine")
    for python in tried:
        done = make_check(python, tmp_path / "none")
        out = version_problem(*identity_of(python))
        if out is None:
            # a supported version may still lack headers or venv here; then it says which
            assert done.returncode == 0 or "will not do:" in done.stderr, (python, done.stderr)
        else:
            assert done.returncode != 0, python
            assert "the course supports CPython 3.11.2 to 3.13" in done.stderr, done.stderr
        assert not (tmp_path / "none").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_venv_made_by_another_interpreter_is_never_reused(tmp_path):
    import sys

    from course_tools.interpreter import version_problem

    base = sys._base_executable   # the interpreter this test venv was made from
    venv = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    assert make_check(base, venv).returncode == 0, make_check(base, venv).stderr
    mine = identity_of(base)
    others = [p for p in interpreters_here() if version_problem(*identity_of(p)) is None
              and (identity_of(p) != mine or Path(p).resolve().parent != Path(base).resolve().parent)]
    if others:
        done = make_check(others[0], venv)
        assert done.returncode != 0
        assert "a venv is never reused across interpreters" in done.stderr and "make clean-venv" in done.stderr
    # a venv whose interpreter is gone
    broken = tmp_path / "broken"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").symlink_to(tmp_path / "removed-python")
    done = make_check(base, broken)
    assert done.returncode != 0 and "its Python does not run" in done.stderr and "make clean-venv" in done.stderr


def test_the_stamp_records_the_interpreter_the_venv_was_made_from():
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "| python-check" in rule.splitlines()[0]      # checked before pip, never forcing a re-install
    assert "interpreter.py --describe > $(STAMP)" in rule
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "src/course_tools/interpreter.py"),
                           "--describe"], capture_output=True, text=True, timeout=60)
    import platform
    import sys

    assert done.stdout.split(" ", 2) == ["CPython", platform.python_version(), sys.base_prefix + "\n"]
