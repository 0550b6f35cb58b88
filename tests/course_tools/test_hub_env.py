"""``course hub-env PREFIX``: the hub's shared environment, built for real from a published edition.

One environment is built for the module (``course publish``, then ``course hub-env``: about a minute and
a half on this machine, printed) in a folder every user can read, then:

* it is installed, not editable: nothing in it points back at the checkout;
* a student (an ordinary Unix user made for the test) runs its Python, imports the course's packages and
  runs ``course check`` from it on an exercise of their own clone of the edition;
* the scan (``course hub-env --check``) passes on it, and fails, naming the file, on each thing planted in
  it: an instructor-only module, a hidden test's line (in a new file and in a third-party file), a copy
  of a solution;
* hub/start.py's check of what students can reach passes with its Python;
* a folder that is not such an environment, and the instructor's own venv, are refused untouched.

Skipped, saying why, where no Python of the venv's minor can be run by every user.
"""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

import unix_users  # noqa: E402

from course_grader.exercise.publish import hidden_lines  # noqa: E402
from course_tools.hub_env.build import MARK, BuildError, choose_python, read_mark, site_packages  # noqa: E402

ROOT = TESTS.parent
COURSE = Path(sys.executable).with_name("course")
SAMPLES = TESTS / "samples" / "submissions"
MINOR = f"{sys.version_info[0]}.{sys.version_info[1]}"
RUNUSER = shutil.which("runuser") or "runuser"      # in /usr/sbin: not on the student's PATH below


def _no_python() -> str:
    try:
        choose_python(None, say=lambda _line: None)
    except BuildError as exc:
        return str(exc)
    return ""


pytestmark = pytest.mark.skipif(bool(_no_python()), reason=_no_python() or "ok")


@pytest.fixture(scope="module")
def built():
    """``(prefix, edition)``: an environment built by ``course hub-env`` from a fresh ``course publish``."""
    shared = Path(tempfile.mkdtemp(prefix="hub-env-test-"))
    shared.chmod(0o755)
    edition, prefix = shared / "edition", shared / "env"
    try:
        started = time.monotonic()
        done = subprocess.run([str(COURSE), "publish", str(edition)], capture_output=True, text=True, cwd=ROOT,
                              timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        published = time.monotonic()
        done = subprocess.run([str(COURSE), "hub-env", str(prefix), "--edition", str(edition)], capture_output=True,
                              text=True, cwd=ROOT, timeout=1800)
        assert done.returncode == 0, done.stdout + done.stderr
        print(f"course publish {published - started:.0f} s, course hub-env {time.monotonic() - published:.0f} s:\n"
              f"{done.stdout}")
        assert "none found" in done.stdout and "next: make hub" in done.stdout, done.stdout
        yield prefix, edition
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def check(prefix: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(COURSE), "hub-env", "--check", str(prefix)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_the_environment_is_installed_not_editable(built):
    prefix, _ = built
    mark = read_mark(prefix)
    assert mark and mark["complete"] and mark["commit"], mark
    asked = subprocess.run([str(prefix / "bin" / "python"), "-c",
                            "import sys, compile_course, course_grader, course_exchange; "
                            "print(compile_course.__file__); print('\\n'.join(sys.path))"],
                           capture_output=True, text=True, cwd="/", timeout=300)
    assert asked.returncode == 0, asked.stderr
    first, *path = asked.stdout.splitlines()
    assert Path(first).is_relative_to(prefix), first
    assert not any(p.startswith(str(ROOT)) for p in path), path            # nothing of the checkout on sys.path
    site = site_packages(prefix, MINOR)
    assert not list(site.glob("__editable__*")), list(site.glob("__editable__*"))
    [record] = site.glob("compile_course-*.dist-info")
    direct = record / "direct_url.json"
    assert not direct.exists() or '"editable": true' not in direct.read_text(), direct.read_text()
    for script in (prefix / "bin").iterdir():
        if script.is_file() and not script.is_symlink() and script.read_bytes().startswith(b"#!"):
            first_line = script.read_bytes().split(b"\n", 1)[0].decode()
            assert str(ROOT) not in first_line and str(sys.prefix) not in first_line, (script, first_line)
    assert not (site / "course_grader" / "samples").exists()
    assert (prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json").is_file()


def test_a_student_runs_its_python_and_course_check(built, tmp_path):
    if reason := unix_users.why_not():
        pytest.skip(reason)
    prefix, edition = built
    gitconfig = edition.parent / "students.gitconfig"          # as hub/spawner_config.py writes it
    gitconfig.write_text(f"[safe]\n\tdirectory = {edition}\n\tdirectory = {edition}/.git\n")
    gitconfig.chmod(0o644)
    with unix_users.class_users(["hub-envstudent"]) as users:
        student = users["hub-envstudent"]
        clone = student.home / "torch-compile-course"

        def as_student(*command: str, cwd: Path = student.home) -> subprocess.CompletedProcess:
            env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(student.home),
                   "GIT_CONFIG_SYSTEM": str(gitconfig), "LANG": "C.UTF-8"}
            return subprocess.run([RUNUSER, "-u", student.name, "--", *command], capture_output=True, text=True,
                                  cwd=cwd, env=env, timeout=900)

        done = as_student("git", "clone", "-q", str(edition), str(clone))
        assert done.returncode == 0, done.stderr
        done = as_student(str(prefix / "bin" / "python"), "-c",
                          "import compile_course, course_grader, course_exchange, torch; print(torch.__version__)")
        assert done.returncode == 0 and done.stdout.strip(), done.stderr
        answered = clone / "exercises" / "ex02_diagnose.ipynb"
        answered.write_bytes((SAMPLES / "correct__ex02_diagnose.ipynb").read_bytes())
        os.chown(answered, student.uid, -1)
        done = as_student("course", "check", "exercises/ex02_diagnose.ipynb", cwd=clone)   # `course` of PATH
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert "public tests: 2/2 points" in out and f"as released in {clone / 'exercises'}" in out, out
        assert "readable by every user" not in out, out          # no checkout's solutions within reach


def test_the_scan_finds_each_thing_planted_and_passes_when_it_is_gone(built):
    prefix, _ = built
    clean = check(prefix)
    assert clean.returncode == 0 and "none found" in clean.stdout, clean.stdout + clean.stderr
    site = site_packages(prefix, MINOR)
    line, where = next(iter(hidden_lines(ROOT / "solutions", ROOT).items()))
    solution = sorted((ROOT / "solutions").glob("ex*.ipynb"))[0]
    third_party = site / "tqdm" / "__init__.py"
    planted = {
        site / "course_grader" / "samples" / "make.py": (ROOT / "src/course_grader/samples/__main__.py").read_bytes(),
        site / "compile_course" / "notes.py": f"# kept for later\n{line}\n".encode(),
        prefix / "share" / "ex-copy.ipynb": solution.read_bytes(),
    }
    expected = {"course_grader/samples/make.py": "an instructor-only module",
                "compile_course/notes.py": f"holds a line of {where}",
                "share/ex-copy.ipynb": f"the same bytes as solutions/{solution.name}",
                "tqdm/__init__.py": f"holds a line of {where}"}
    original = third_party.read_bytes()
    try:
        for path, data in planted.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        third_party.unlink()                                  # a hard link: the instructor's venv keeps its file
        third_party.write_bytes(original + f"\n{line}\n".encode())
        found = check(prefix)
        lines = [x for x in found.stdout.splitlines() if x.startswith("FOUND ")]
        assert found.returncode == 1, found.stdout + found.stderr
        for rel, what in expected.items():
            assert any(rel in x and what in x for x in lines), (rel, what, lines)
        assert len(lines) == len(expected), lines
    finally:
        for path in planted:
            path.unlink(missing_ok=True)
        shutil.rmtree(site / "course_grader" / "samples", ignore_errors=True)
        third_party.unlink(missing_ok=True)
        third_party.write_bytes(original)
    assert check(prefix).returncode == 0


def test_the_hub_start_takes_it_and_accepts_its_python(built, monkeypatch, capsys):
    prefix, edition = built
    start = runpy.run_path(str(ROOT / "hub" / "start.py"))
    monkeypatch.setenv("COURSE_HUB_ENV", str(prefix))
    built_at = (prefix / MARK).stat().st_mtime_ns
    assert start["ensure_environment"](str(edition), False) == prefix       # users mode, as make hub runs it
    assert (prefix / MARK).stat().st_mtime_ns == built_at                   # built from this commit: kept
    assert f"students' environment: {prefix}, built" in capsys.readouterr().out
    start["check_reachable"](str(edition), prefix / "bin" / "python")      # raises SystemExit(2) when closed


def test_a_folder_that_is_not_an_environment_is_refused_untouched(tmp_path):
    other = tmp_path / "data"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    for prefix in (other, Path(sys.prefix)):
        done = subprocess.run([str(COURSE), "hub-env", str(prefix), "--edition", str(tmp_path / "none")],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "give a new or empty folder" in done.stderr or "instructor's venv" in done.stderr, done.stderr
    assert (other / "keep.txt").read_text() == "mine" and not (other / MARK).exists()
    assert (Path(sys.prefix) / "bin" / "python").exists() and not (Path(sys.prefix) / MARK).exists()


SERVER_TIMEOUT_S = 600.0      # a server imports jupyterlab on 2 busy cores; generous, never asserted


def servers_of(uid: int) -> list[int]:
    """Pids of the single-user servers running as ``uid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid \
                    and b"jupyterhub-singleuser" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_users_mode_hub_runs_a_students_server_from_it(built, tmp_path):
    """hub/spawner_config.py with COURSE_HUB_ENV (as make hub sets it): the server is the environment's
    jupyterhub-singleuser, run as the student, and it answers through the hub's proxy."""
    import hubtools
    import requests

    if reason := hubtools.skip_reason() or unix_users.why_not():
        pytest.skip(reason)
    prefix, edition = built
    env = {"COURSE_HUB_ENV": str(prefix), "COURSE_HUB_EDITION": str(edition),
           "COURSE_HUB_SHARED": str(edition.parent / "hub-shared")}
    with unix_users.class_users(["hub-envserver"]) as users:
        student = users["hub-envserver"]
        with hubtools.running_hub(tmp_path / "state", demo=False, env=env) as hub:
            hub.add_user(student.name)
            hub.api("POST", f"users/{student.name}/server", ok=(201, 202))
            deadline = time.monotonic() + SERVER_TIMEOUT_S
            while not hub.api("GET", f"users/{student.name}")["servers"].get("", {}).get("ready"):
                assert time.monotonic() < deadline, f"the server did not start:\n{hub.log_text()[-3000:]}"
                time.sleep(1)
            [pid] = servers_of(student.uid)
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = dict(x.split(b"=", 1) for x in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                           if b"=" in x)
            uid = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("Uid:"))
            token = hub.token(student.name)
            status = requests.get(f"{hub.url}user/{student.name}/api/status", timeout=60,
                                  headers={"Authorization": f"token {token}"})
    assert str(prefix / "bin" / "jupyterhub-singleuser").encode() in command, command
    assert set(uid.split()[1:]) == {str(student.uid)}, uid
    assert environ[b"PATH"].startswith(str(prefix / "bin").encode()), environ[b"PATH"]
    assert environ[b"COURSE_ROOT"] == str(student.home / "torch-compile-course").encode()
    assert status.status_code == 200, (status.status_code, status.text[:300])
