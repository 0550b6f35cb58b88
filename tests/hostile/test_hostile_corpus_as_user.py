"""The hostile corpus graded by an ordinary user (confined in user namespaces, no cgroups), in one batch:
the same fair verdicts as root, no grader fault, plus a file the user cannot read.

Slower than the root run (a created user; the run's first grading as that user warms up, in whichever
test comes first: ``ordinary_user.user_env``). Needs root to create the user
(``tests/ordinary_user.py``) and a kernel that allows user namespaces.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from judge import ROOT, Verdicts, expected_verdicts, grader_traceback, make_class, undeserved

from ordinary_user import cannot_grade_as_user, ordinary_user, user_env

COURSE = Path(sys.executable).with_name("course")
EXPECTED = expected_verdicts(unreadable=True)
GRADE_TIMEOUT_S = 3600


pytestmark = pytest.mark.skipif(bool(cannot_grade_as_user()), reason=cannot_grade_as_user() or "ok")


@pytest.fixture(scope="module")
def graded():
    user = ordinary_user()
    home = Path(tempfile.mkdtemp(prefix="hostile-as-user-", dir=user.pw_dir))
    expected = make_class(home / "class", unreadable=True)
    assert set(expected) == set(EXPECTED)
    for path in [home, *(home / "class").rglob("*")]:
        os.lchown(path, user.pw_uid, user.pw_gid)
    env = user_env(user, home)
    result = subprocess.run(["runuser", "-u", user.pw_name, "--", "env", "-i",
                             *(f"{k}={v}" for k, v in env.items()), str(COURSE), "grade", "run", str(home / "class"),
                             "--out", str(home / "out"), "--no-progress", "--jobs", "2",
                             "--solutions", str(ROOT / "solutions")],
                            cwd=home, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S)
    yield result, Verdicts(home / "out", result.stdout + result.stderr)
    shutil.rmtree(home, ignore_errors=True)


def test_the_grader_never_faults_as_an_ordinary_user(graded):
    result, verdicts = graded
    printed = result.stdout + result.stderr
    assert result.returncode == 0, printed[-6000:]
    assert "confined in user namespaces" in printed, printed[-3000:]
    assert not grader_traceback(printed), printed[-6000:]
    assert not undeserved(verdicts, {n: w for n, w in EXPECTED.items() if "open" not in w})


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=w["open"], strict=False))
                                  if "open" in w else n for n, w in sorted(EXPECTED.items())])
def test_each_case_gets_its_fair_verdict_as_an_ordinary_user(graded, name):
    _, verdicts = graded
    problem = verdicts.problem(name, EXPECTED[name])
    assert not problem, f"{name}: {problem}\n  (the case: {EXPECTED[name].get('why', '')})"


def test_no_student_text_becomes_a_formula_or_live_html_as_an_ordinary_user(graded):
    _, verdicts = graded
    assert verdicts.formulas() == []
    assert verdicts.live_html() == []
