"""The hostile corpus (issue 26 item 6), graded as root in one batch: every case gets its fair verdict, and
the grader never faults.

The cases are in ``corpus.py`` (each with what it tries and why its verdict is fair), their notebooks in
``submissions/`` and their verdicts in ``submissions/expected.json``. One ``course grade`` of the whole
class, as an instructor runs it; then each case is its own test, so a failure names the case. A case
marked ``open`` is a hole not closed yet: its fair verdict is expected to fail (xfail), and says who owns it.
The same class graded by an ordinary user: ``test_hostile_corpus_as_user.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from judge import Verdicts, expected_verdicts, grader_traceback, make_class, undeserved

COURSE = Path(sys.executable).with_name("course")
EXPECTED = expected_verdicts()
GRADE_TIMEOUT_S = 3600

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the root run; as an ordinary user see the _as_user tests")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    expected = make_class(folder / "class")
    assert set(expected) == set(EXPECTED)
    result = subprocess.run([str(COURSE), "grade", "run", str(folder / "class"), "--out", str(folder / "out"),
                             "--no-progress", "--jobs", "2"], capture_output=True, text=True,
                            timeout=GRADE_TIMEOUT_S)
    return result, Verdicts(folder / "out", result.stdout + result.stderr)


def test_the_grader_never_faults(graded):
    result, verdicts = graded
    printed = result.stdout + result.stderr
    assert result.returncode == 0, printed[-6000:]
    assert not grader_traceback(printed), printed[-6000:]
    assert not undeserved(verdicts, {n: w for n, w in EXPECTED.items() if "open" not in w})


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=w["open"], strict=False))
                                  if "open" in w else n for n, w in sorted(EXPECTED.items())])
def test_each_case_gets_its_fair_verdict(graded, name):
    _, verdicts = graded
    problem = verdicts.problem(name, EXPECTED[name])
    assert not problem, f"{name}: {problem}\n  (the case: {EXPECTED[name].get('why', '')})"


def test_no_student_text_becomes_a_formula_or_live_html(graded):
    _, verdicts = graded
    assert (verdicts.out / "review.csv").exists() and (verdicts.out / "feedback" / "index.html").exists()
    assert verdicts.formulas() == []
    assert verdicts.live_html() == []
