"""The Makefile's set-up: the venv step refuses to start without the disk space it needs, the browser
step stops CI when chromium cannot be installed, and make runs Python with its bytecode cache on."""

import os
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
