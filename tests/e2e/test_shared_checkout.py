"""A checkout shared by a class, as a created ordinary user (a student) meets it.

* after ``course seal``, no file the student can read holds a line of a hidden test (before it, some do:
  the test can fail);
* ``course check`` works for the student from the released exercises, and accepts the guide's path
  ``work/exercises/...`` although their workspace is ``~/torch-compile-course-work``;
* the workspace and the hand-ins are the student's alone (0700 folders, 0600 files).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_grader.exercise.publish import file_lines, hidden_lines

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from ordinary_user import can_make_users, ordinary_user  # noqa: E402

pytestmark = pytest.mark.skipif(bool(can_make_users()), reason=can_make_users() or "ok")

# run as the student: every file it can open under the checkout, by path (objects of a git store decompressed)
READABLE = """
import os, sys, json, zlib
out = {}
for folder, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        path = os.path.join(folder, name)
        try:
            with open(path, 'rb') as fh:
                data = fh.read(5_000_000)
        except OSError:
            continue
        try:
            data = zlib.decompress(data)
            data = data.split(b"\\0", 1)[1] if data.startswith(b"blob ") else data
        except zlib.error:
            pass
        out[path] = data.decode('utf-8', 'replace')
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def student():
    return ordinary_user()


@pytest.fixture
def checkout():
    """A shared checkout owned by root, open to all as a clone is (0755/0644), with history and a build
    (in a folder of /tmp of its own: pytest's are closed to other users)."""
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="course-shared-", dir="/tmp"))
    root = top / "course"
    for name in ("notebooks", "exercises", "solutions", "src", "lab", "docs", "tests"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (root / "build" / "grading").mkdir(parents=True)
    shutil.copy2(ROOT / "solutions" / "ex02_diagnose.ipynb", root / "build" / "grading" / "executed.ipynb")
    (root / "build" / "edition").mkdir()          # the hub's student edition: students clone it
    (root / "build" / "edition" / "README.md").write_text("the student edition\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "solutions"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"],
                   check=True)
    for folder, dirs, files in os.walk(root):
        for d in dirs:
            os.chmod(os.path.join(folder, d), 0o755)
        for f in files:
            os.chmod(os.path.join(folder, f), 0o644)
    os.chmod(root, 0o755)
    os.chmod(top, 0o755)
    yield root
    shutil.rmtree(top, ignore_errors=True)


def as_student(user, *command, env=None):
    base = {"PATH": "/usr/bin:/bin", "HOME": user.pw_dir, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(["runuser", "-u", user.pw_name, "--", "env", "-i",
                           *(f"{k}={v}" for k, v in {**base, **(env or {})}.items()), *command],
                          capture_output=True, text=True, cwd=user.pw_dir, timeout=900)


def readable_leaks(user, root: Path, lines: dict[str, str]) -> list[str]:
    done = as_student(user, sys.executable, "-c", READABLE, str(root))
    assert done.returncode == 0, done.stderr
    return [path for path, text in json.loads(done.stdout).items()
            if file_lines(text.encode()) & lines.keys()]


def test_a_student_reads_no_hidden_test_in_a_sealed_checkout(student, checkout):
    lines = hidden_lines(checkout / "solutions")
    before = readable_leaks(student, checkout, lines)
    assert any("/solutions/" in p for p in before) and any("/.git/" in p for p in before), before
    done = subprocess.run([sys.executable, "-m", "course_tools.cli", "seal", "--root", str(checkout)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not readable_leaks(student, checkout, lines)
    edition = as_student(student, "cat", str(checkout / "build" / "edition" / "README.md"))
    assert edition.returncode == 0 and "student edition" in edition.stdout, edition.stderr
    assert as_student(student, "ls", str(checkout / "build")).returncode != 0
    check = subprocess.run([sys.executable, "-m", "course_tools.cli", "seal", "--check", "--root", str(checkout)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def test_check_and_submit_as_a_student_of_a_sealed_shared_checkout(student, checkout):
    subprocess.run([sys.executable, "-m", "course_tools.cli", "seal", "--root", str(checkout)], check=True)
    env = {"PYTHONPATH": str(checkout / "src")}
    home = Path(student.pw_dir)
    work = home / "torch-compile-course-work"
    shutil.rmtree(work, ignore_errors=True)
    done = as_student(student, sys.executable, "-m", "course_tools.cli", "workspace", env=env)
    assert done.returncode == 0 and str(work) in done.stdout, done.stdout + done.stderr
    assert os.stat(work).st_mode & 0o777 == 0o700
    copy = work / "exercises" / "ex02_diagnose.ipynb"
    assert os.stat(copy).st_mode & 0o777 == 0o600
    assert os.stat(work / "exercises").st_mode & 0o777 == 0o700

    # the guide's path, from the student's home: the workspace is not ./work, and check says where it is
    done = as_student(student, sys.executable, "-m", "course_tools.cli", "check",
                      "work/exercises/ex02_diagnose.ipynb", env=env)
    out = done.stdout
    assert f"it is your workspace's {copy}" in out, out + done.stderr
    assert "as released in" in out and "hidden tests: 2 (4 points)" in out, out + done.stderr
    assert "NOT ANSWERED  ex02-breaks" in out and done.returncode == 1

    done = as_student(student, sys.executable, "-m", "course_tools.cli", "check", "nowhere/ex09_none.ipynb",
                      env=env)
    assert done.returncode == 2 and f"nor in your workspace, which is {work}" in done.stderr, done.stderr

    done = as_student(student, sys.executable, "-m", "course_tools.cli", "submit",
                      "work/exercises/ex02_diagnose.ipynb", "--student", "alice", env=env)
    handin = work / "handin" / "alice__ex02_diagnose.ipynb"
    assert done.returncode == 0 and handin.is_file(), done.stdout + done.stderr
    assert os.stat(handin).st_mode & 0o777 == 0o600
    assert os.stat(handin.parent).st_mode & 0o777 == 0o700
    shutil.rmtree(work, ignore_errors=True)


def test_a_student_is_told_when_the_shared_checkout_is_open_and_not_after_seal(student, checkout):
    env = {"PYTHONPATH": str(checkout / "src")}
    work = Path(student.pw_dir) / "torch-compile-course-work"
    shutil.rmtree(work, ignore_errors=True)
    done = as_student(student, sys.executable, "-m", "course_tools.cli", "workspace", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "should run `course seal`" in done.stderr and "root" in done.stderr, done.stderr
    subprocess.run([sys.executable, "-m", "course_tools.cli", "seal", "--root", str(checkout)], check=True)
    done = as_student(student, sys.executable, "-m", "course_tools.cli", "workspace", env=env)
    assert done.returncode == 0 and "course seal" not in done.stderr, done.stdout + done.stderr
    shutil.rmtree(work, ignore_errors=True)


def test_what_the_owner_adds_to_a_sealed_checkout_is_closed_by_their_next_command(student, checkout):
    subprocess.run([sys.executable, "-m", "course_tools.cli", "seal", "--root", str(checkout)], check=True)
    # what a later `make course` or `course grade` writes is made with the owner's umask: open to all
    later = checkout / "build" / "grading-later"
    later.mkdir(mode=0o755)
    (later / "executed.ipynb").write_text((checkout / "solutions" / "ex02_diagnose.ipynb").read_text())
    os.chmod(later, 0o755)
    os.chmod(later / "executed.ipynb", 0o644)
    # build/ cannot be listed, but a path named in the docs can be guessed
    assert as_student(student, "cat", str(later / "executed.ipynb")).returncode == 0
    check = subprocess.run([sys.executable, "-m", "course_tools.cli", "seal", "--check"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(checkout / "src")})
    assert check.returncode == 1 and "grading-later" in check.stdout, check.stdout   # --check changes nothing
    done = subprocess.run([sys.executable, "-m", "course_tools.cli", "release", "--check"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(checkout / "src")})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert as_student(student, "cat", str(later / "executed.ipynb")).returncode != 0
    assert os.stat(later).st_mode & 0o777 == 0o700
