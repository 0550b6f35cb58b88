"""The set-up (the Makefile's venv step) refuses to start without the disk space it needs."""

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
