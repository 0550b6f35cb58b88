"""``course submit`` on a hub hands in through the exchange, or hands in nothing and says why.

The hub trial: in a Lab terminal, ``course submit FILE --student NAME`` took the single-machine path,
saved ``handin/NAME__exNN.ipynb`` in the student's own home, said "handed in", and nothing reached the
instructor. Each case here runs the ``course`` command with a Lab terminal's environment on the shared
test hub, and looks both at what it printed and at what the instructor's ``collect`` gets.
"""

import os
import subprocess
from pathlib import Path

from conftest import COURSE_CMD, ROOT, SAMPLES

NOTEBOOK = "ex02_diagnose.ipynb"


def handed_in_lines(out: str) -> list[str]:
    """The lines that tell a student their work was handed in (both forms: the exchange's and the local one)."""
    return [line for line in out.splitlines() if line.startswith("handed in:")]


def local_handins(student: str, *folders: Path) -> list[Path]:
    return [p for folder in folders if folder.is_dir() for p in folder.rglob(f"{student}__{NOTEBOOK}")]


def notebook(tmp_path: Path) -> Path:
    path = tmp_path / "work" / NOTEBOOK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((SAMPLES / f"correct__{NOTEBOOK}").read_bytes())
    return path


def test_student_flag_with_your_own_name_hands_in_through_the_exchange(make_course, tmp_path):
    course = make_course(students=1)
    student, prof = course.students[0], course.instructors[0]
    path = notebook(tmp_path)
    r = course.course(student, "submit", path, "--student", student, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [line for line in handed_in_lines(r.stdout) if line.startswith("handed in: #")], r.stdout
    counted = course.client(prof).collect(course.id)["counted"]
    assert [(h["student"], h["exercise_name"]) for h in counted] == [(student, "ex02_diagnose")], counted
    assert local_handins(student, tmp_path, ROOT / "handin") == []          # no local copy the instructor never gets


def test_another_name_an_out_folder_or_no_exchange_hand_in_nothing_and_say_why(make_course, tmp_path):
    course = make_course(students=2)
    student, other = course.students
    prof = course.instructors[0]
    path = notebook(tmp_path)

    r = course.course(student, "submit", path, "--student", other, cwd=tmp_path)
    assert r.returncode == 2 and handed_in_lines(r.stdout) == [], r.stdout + r.stderr
    assert f"you hand in as your hub user, {student}, not {other}" in r.stderr, r.stderr

    out = tmp_path / "drop"
    r = course.course(student, "submit", path, "--student", student, "--out", out, cwd=tmp_path)
    assert r.returncode == 2 and handed_in_lines(r.stdout) == [], r.stdout + r.stderr
    assert "a hand-in goes to the exchange" in r.stderr and f"course submit {path}" in r.stderr, r.stderr
    assert not out.exists()

    # a hub server whose exchange is not configured (the token alone): nothing local, and the reason
    env = {k: v for k, v in course.env(student).items() if k != "COURSE_EXCHANGE_URL"}
    r = subprocess.run([str(COURSE_CMD), "submit", str(path), "--student", student], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and handed_in_lines(r.stdout) == [], r.stdout + r.stderr
    assert "no course exchange is named" in r.stderr and "nothing was handed in" in r.stderr, r.stderr

    # an exchange that does not answer (a port nobody listens on)
    env = {**course.env(student), "COURSE_EXCHANGE_URL": "http://127.0.0.1:9/services/course-exchange/"}
    r = subprocess.run([str(COURSE_CMD), "submit", str(path)], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 2 and handed_in_lines(r.stdout) == [], r.stdout + r.stderr
    assert "did not answer" in r.stderr and "nothing was handed in" in r.stderr, r.stderr

    assert course.client(prof).collect(course.id)["counted"] == []
    home_workspace = Path(os.path.expanduser("~/torch-compile-course-work"))
    assert local_handins(student, tmp_path, ROOT / "handin", home_workspace) == []
