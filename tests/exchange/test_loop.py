"""The whole loop through a real hub, with the course commands a student and an instructor type in their
Lab terminals: hand in, collect, grade, hand back, return, fetch feedback."""

import csv
import hashlib
import json
import shlex
from datetime import UTC, datetime
from pathlib import Path

import requests

from conftest import SAMPLES


def test_hand_in_collect_grade_return_and_feedback(make_course, tmp_path):
    course = make_course(students=2)
    alice, bob = course.students
    prof = course.instructors[0]
    work = tmp_path / "work"
    work.mkdir()
    first = work / "ex02_diagnose.ipynb"
    first.write_bytes((SAMPLES / "unanswered__ex02_diagnose.ipynb").read_bytes())
    r = course.course(alice, "submit", first, check=True)
    assert "handed in: #" in r.stdout and "not answered" in r.stdout      # the grader's warnings, taken
    assert "this one counts: your latest hand-in is the one graded" in r.stdout     # no deadline set
    first.write_bytes((SAMPLES / "correct__ex02_diagnose.ipynb").read_bytes())
    course.course(alice, "submit", first, check=True)
    bob_file = tmp_path / "bob" / "ex02_diagnose.ipynb"
    bob_file.parent.mkdir()
    bob_file.write_bytes((SAMPLES / "partial__ex02_diagnose.ipynb").read_bytes())
    course.course(bob, "submit", bob_file, "--course", course.id, check=True)

    mine = course.course(alice, "handins", check=True).stdout
    assert mine.count("ex02_diagnose") == 2 and mine.count("counts") == 1

    collected = tmp_path / "collected"
    r = course.course(prof, "collect", course.id, "--to", collected, check=True)
    assert "collected 2 hand-in(s)" in r.stdout
    files = sorted(p.name for p in collected.glob("*.ipynb"))
    assert files == sorted([f"{alice}__ex02_diagnose.ipynb", f"{bob}__ex02_diagnose.ipynb"])
    assert (collected / f"{alice}__ex02_diagnose.ipynb").read_bytes() == first.read_bytes()   # the latest counts
    assert (collected / f"{bob}__ex02_diagnose.ipynb").read_bytes() == bob_file.read_bytes()
    manifest = json.loads((collected / ".collected.json").read_text())     # hidden: course grade reads notebooks
    assert {m["sha256"] for m in manifest} == {hashlib.sha256(first.read_bytes()).hexdigest(),
                                               hashlib.sha256(bob_file.read_bytes()).hexdigest()}

    # the next step collect names, run as printed (issue 35: it named a form that did not work)
    [hint] = [line for line in r.stdout.splitlines() if line.startswith("next: course ")]
    step = shlex.split(hint.removeprefix("next: course "))
    assert step[:3] == ["grade", "run", str(collected)] and step[3] == "--out", hint
    out = Path(step[4])
    graded = course.course(prof, *step, "--no-progress", check=True)
    assert "problem:" not in graded.stdout + graded.stderr          # the folder is the hand-ins, nothing else
    r = course.course(prof, "grade", "hand-back", out, check=True)
    handback = out.with_name(out.name + "-hand-back")
    # the next step hand-back names, run as printed (issue 35: it did not name course return)
    [hint] = [line for line in r.stdout.splitlines() if line.startswith("next, on the class's hub")]
    step = shlex.split(hint.split(": ", 1)[1])
    assert step[:2] == ["course", "return"] and Path(step[2]) == handback, hint
    r = course.course(prof, *step[1:], check=True)
    assert "returned feedback to 2 student(s)" in r.stdout and course.id in r.stdout, r.stdout
    with open(out / "lms" / "grades.csv", newline="") as fh:
        totals = {row["student"]: row for row in csv.DictReader(fh)}

    home = tmp_path / "alice-feedback"
    r = course.course(alice, "feedback", "--to", home, check=True)
    [path] = [line.rsplit(": ", 1)[1] for line in r.stdout.splitlines() if "in a browser" in line]
    page = requests.get(course.hub.url.rstrip("/") + path, timeout=60, allow_redirects=False,
                        headers={"Authorization": f"token {course.tokens[alice]}"})     # through the hub's proxy
    assert page.status_code == 200 and alice in page.text, (path, page.status_code, page.text[:300])
    assert f"{float(totals[alice]['total']):g} / {float(totals[alice]['possible']):g}" in _numbers(r.stdout)
    assert (home / "index.html").read_bytes() == (handback / alice / "index.html").read_bytes()
    assert sorted(p.name for p in home.iterdir()) == sorted(p.name for p in (handback / alice).iterdir()
                                                            if p.suffix == ".html")
    assert bob not in (home / "index.html").read_text()
    other = tmp_path / "bob-feedback"
    course.course(bob, "feedback", "--to", other, check=True)
    assert (other / "index.html").read_bytes() == (handback / bob / "index.html").read_bytes()


def _numbers(text: str) -> str:
    """'7.0 / 10.0 points' and '7 / 10 points' read alike."""
    import re

    return re.sub(r"(\d+)\.0\b", r"\1", text)


def test_a_deadline_decides_which_hand_in_counts_and_late_ones_are_kept(make_course, tmp_path):
    course = make_course(students=1)
    student, prof = course.students[0], course.instructors[0]
    me, teacher = course.client(student), course.client(prof)
    early = (SAMPLES / "unanswered__ex02_diagnose.ipynb").read_bytes()
    late = (SAMPLES / "correct__ex02_diagnose.ipynb").read_bytes()
    on_time = me.hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", early)["handin"]
    deadline = datetime.now(UTC).isoformat()
    teacher.set_deadlines(course.id, {"ex02": deadline})
    after = me.hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", late)["handin"]
    assert after["late"] and not after["counts"]
    listed = {h["id"]: h for h in me.my_handins(course.id)["handins"]}
    assert listed[on_time["id"]]["counts"] and not listed[on_time["id"]]["late"]
    assert listed[after["id"]]["late"]
    counted = teacher.collect(course.id)["counted"]
    assert [h["id"] for h in counted] == [on_time["id"]]
    assert teacher.handin_file(course.id, after["id"]) == late            # kept, for the instructor to see
    teacher.set_deadlines(course.id, {"ex02": None})                       # no deadline: the latest counts
    assert [h["id"] for h in teacher.collect(course.id)["counted"]] == [after["id"]]
    r = course.course(prof, "deadlines", course.id, "ex03=2030-01-01T00:00+00:00", check=True)
    assert "ex03  2030-01-01T00:00:00.000000+00:00" in r.stdout
