"""``make hub``'s checks before the hub starts (hub/start.py), in users mode."""

from __future__ import annotations

import runpy
import shutil
import tempfile
from pathlib import Path

import pytest

START = Path(__file__).resolve().parents[2] / "hub" / "start.py"


@pytest.fixture
def open_dir():
    """A folder every user can pass (pytest's own tmp_path lies under a 0700 folder)."""
    folder = Path(tempfile.mkdtemp(prefix="hub-start-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def start():
    return runpy.run_path(str(START))        # its functions; main() runs only as a script


def test_a_python_students_cannot_run_stops_the_hub_naming_the_folder(open_dir, start, capsys):
    tmp_path = open_dir
    closed = tmp_path / "home"
    (closed / "venv" / "bin").mkdir(parents=True)
    python = closed / "venv" / "bin" / "python"
    python.write_text("")
    edition = tmp_path / "edition"
    edition.mkdir()
    tmp_path.chmod(0o755)
    edition.chmod(0o755)
    closed.chmod(0o700)
    with pytest.raises(SystemExit) as stop:
        start["check_reachable"](str(edition), python)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"{closed} is closed to other users" in err and "chmod o+x" in err, err


def test_a_reachable_python_and_edition_pass(open_dir, start, capsys):
    tmp_path = open_dir
    for folder in (tmp_path, tmp_path / "env", tmp_path / "edition"):
        folder.mkdir(exist_ok=True)
        folder.chmod(0o755)
    python = tmp_path / "env" / "python"
    python.write_text("")
    python.chmod(0o755)
    opened = [p for p in tmp_path.parents if p.stat().st_mode & 0o001 == 0]
    if opened:
        pytest.skip(f"{opened[0]} is closed to other users on this machine")
    start["check_reachable"](str(tmp_path / "edition"), python)
    assert capsys.readouterr().err == ""


def test_an_unsealed_checkout_is_named_with_the_step_to_run(tmp_path, start):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions").chmod(0o755)
    reminder = start["seal_reminder"](tmp_path)
    assert reminder and "course seal" in reminder and "solutions" in reminder
    (tmp_path / "solutions").chmod(0o700)
    assert start["seal_reminder"](tmp_path) is None


def test_lti_settings_are_read_before_the_hub_starts(tmp_path, start, capsys):
    bad = tmp_path / "lti.toml"
    bad.write_text('[platform]\nissuer = "https://lms.example.edu"\n')
    with pytest.raises(SystemExit) as stop:
        start["lti_urls"](str(bad), "http://127.0.0.1:8000/")
    assert stop.value.code == 2
    assert "[platform] client_id is missing" in capsys.readouterr().err
    bad.write_text(bad.read_text() + 'client_id = "c1"\ndeployment_ids = ["d1"]\n'
                   'auth_url = "https://lms.example.edu/auth"\ntoken_url = "https://lms.example.edu/token"\n'
                   'jwks_url = "https://lms.example.edu/jwks"\n[courses]\n"ctx-9" = "tcc"\n')
    lines = start["lti_urls"](str(bad), "http://127.0.0.1:8000/")
    assert "ctx-9 -> tcc" in lines[0]
    assert "http://127.0.0.1:8000/hub/lti13/oauth_login" in lines[1] and "hub/lti13/oauth_callback" in lines[1]
