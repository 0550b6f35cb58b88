"""The grader run by an ordinary user, as most instructors run it: confined in user namespaces.

The suite runs as root here; these tests create an ordinary user (``tests/ordinary_user.py``),
give it passage to this venv's Python, and run as that user:

* every sandbox test (``tests/course_grader/sandbox/``): hidden tests, gradebook and output out of
  sight, no network, nothing surviving a run, the compile cache, each limit;
* the bundled samples, one of each kind (the demonstration class of ``make course``: correct,
  partial, unanswered, tampered, broken, an infinite loop, adversarial, honest but unusual), each
  checked against the verdict it gets as root (its ``expected.json``, which the root suite checks);
* a one-worker Dask cluster grading through ``course grade run --cluster local:1``.

Each needs root (to create the user) and a kernel that allows user namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ordinary_user import cannot_grade_as_user, ordinary_user, user_env

ROOT = Path(__file__).resolve().parents[2]
COURSE = Path(sys.executable).with_name("course")


pytestmark = pytest.mark.skipif(bool(cannot_grade_as_user()), reason=cannot_grade_as_user() or "ok")


@pytest.fixture(scope="module")
def user():
    return ordinary_user()


@pytest.fixture
def home(user):
    """A fresh folder of the user's own, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="grader-as-user-", dir=user.pw_dir))
    os.chown(folder, user.pw_uid, user.pw_gid)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_user(user, home: Path, *command: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    env = user_env(user, home)
    return subprocess.run(["runuser", "-u", user.pw_name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
                           *command], cwd=home, capture_output=True, text=True, timeout=timeout)


def test_every_sandbox_test_passes_as_an_ordinary_user(user, home):
    result = as_user(user, home, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                     "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-o", "addopts=",
                     str(ROOT / "tests" / "course_grader" / "sandbox"))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert " passed" in out and "cannot be confined" not in out, out[-3000:]
    # only what an ordinary user has no means to: cgroups, and leased uids (root's own mechanisms)
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert all(("cgroup" in line or "leased uids" in line) for line in skipped), skipped


def _gradebook_rows(path: Path) -> dict[str, dict]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return {Path(r["path"]).name: dict(r) for r in db.execute("SELECT * FROM attempts")}


def test_one_sample_of_each_kind_gets_its_root_verdict_as_an_ordinary_user(user, home):
    script = ("import sys\nfrom pathlib import Path\nfrom course_grader.samples.demo import grade_demo\n"
              f"line, ok = grade_demo(Path({str(home / 'demo')!r}), jobs=2, progress=False)\n"
              "print(line)\nsys.exit(0 if ok else 1)")
    result = as_user(user, home, sys.executable, "-c", script)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert "as expected" in out and "PROBLEMS" not in out, out[-3000:]
    expected = {}
    for folder in (home / "demo").glob("submissions*"):
        expected.update(json.loads((folder / "expected.json").read_text()))
    rows = _gradebook_rows(home / "demo" / "gradebook.sqlite")
    assert set(expected) <= set(rows) and len(expected) >= 8
    assert {kind for kind in (name.split("-")[0].split("__")[0] for name in expected)} >= {
        "correct", "partial", "unanswered", "tamper", "bad", "crash", "adv", "honest"}
    # the results are the user's, not root's
    assert (home / "demo" / "gradebook.sqlite").stat().st_uid == user.pw_uid


def test_a_one_worker_dask_cluster_grades_as_an_ordinary_user(user, home):
    from course_grader.exercise.model import load_exercises
    from course_grader.samples import notebook_bytes, samples_for

    every = samples_for(load_exercises(ROOT / "solutions"))
    names = ["correct__ex02_diagnose.ipynb", "unanswered__ex02_diagnose.ipynb",
             "adv-computed-answer__ex02_diagnose.ipynb"]
    subs = home / "class"
    subs.mkdir()
    for name in names:
        (subs / name).write_bytes(notebook_bytes(every[name][0]))
    for path in (subs, *subs.iterdir()):
        os.chown(path, user.pw_uid, user.pw_gid)
    result = as_user(user, home, str(COURSE), "grade", "run", str(subs), "--cluster", "local:1", "--no-progress",
                     "--out", str(home / "out"))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert "confined in user namespaces" in out, out[-3000:]
    from course_grader.results.gradebook import Gradebook
    from course_grader.samples.expectations import check_expectations

    with Gradebook(home / "out" / "gradebook.sqlite") as book:   # the samples' own expectations, as root checks them
        assert check_expectations(book, {name: every[name][1] for name in names}) == []
