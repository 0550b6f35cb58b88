"""The release record: updates mid-term flag no one, and a student's copy of the course knows its hidden
tests' ids and points (not their code), so ``course check`` works from the student edition alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_grader.exercise import release, release_record
from course_grader.exercise.model import Exercise
from course_grader.exercise.release import answered_notebook, student_notebook

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = ROOT / "solutions"


def _edit_cell(path: Path, cid: str, new_source: str) -> None:
    nb = nbformat.read(path, as_version=4)
    next(c for c in nb.cells if c.get("id") == cid).source = new_source
    nbformat.write(nb, path)


def test_a_submission_from_the_first_release_is_not_flagged_after_the_course_edits_a_locked_cell(
        tmp_path, grade_fake):
    """Release, fix a locked code cell and a test cell, release again, grade a hand-in made from the
    first release: graded, no flag; a student's own edit of the same cell is still flagged."""
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    shutil.copy2(SOLUTIONS / "ex02_diagnose.ipynb", course / "solutions")
    release.release_all(course / "solutions", course / "exercises")
    first = answered_notebook(Exercise.load(course / "solutions" / "ex02_diagnose.ipynb"))

    source = course / "solutions" / "ex02_diagnose.ipynb"
    ex = Exercise.load(source)
    _edit_cell(source, "ex02-categories", ex.cell("ex02-categories").source.replace("categories:", "categories :"))
    _edit_cell(source, "ex02-test-breaks", ex.cell("ex02-test-breaks").source + "\n# a comment the course added")
    release.release_all(course / "solutions", course / "exercises")
    record = release_record.read(course / "exercises")["ex02_diagnose"]
    assert record.releases == 2 and len(record.versions["ex02-categories"]) == 2

    tampered = answered_notebook(Exercise.load(source))
    next(c for c in tampered.cells if c.get("id") == "ex02-categories").source = "print('mine')"
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(first, subs / "alice__ex02_diagnose.ipynb")
    nbformat.write(tampered, subs / "bob__ex02_diagnose.ipynb")
    report = grade_fake(subs, tmp_path / "out", solutions=course / "solutions", warm=False)
    by_student = {a.student: a for a in report.graded}
    assert by_student["alice"].status == "graded" and not by_student["alice"].flags, by_student["alice"].flags
    assert any("earlier release" in n for n in by_student["alice"].notices)
    assert by_student["alice"].auto_score == by_student["alice"].auto_possible
    assert by_student["bob"].status == "flagged"
    assert any("ex02-categories: locked cell edited" in f for f in by_student["bob"].flags)


def test_release_keeps_the_history_and_check_notices_a_stale_record(tmp_path):
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    shutil.copy2(SOLUTIONS / "ex02_diagnose.ipynb", course / "solutions")
    release.release_all(course / "solutions", course / "exercises")
    assert not release.check_all(course / "solutions", course / "exercises")
    (course / "exercises" / release_record.RECORD).unlink()
    assert any(release_record.RECORD in p for p in release.check_all(course / "solutions", course / "exercises"))


def test_the_record_holds_ids_and_points_of_the_hidden_tests_and_no_code():
    records = release_record.read(ROOT / "exercises")
    text = (ROOT / "exercises" / release_record.RECORD).read_text()
    for ex in (Exercise.load(p) for p in sorted(SOLUTIONS.glob("ex[0-9][0-9]_*.ipynb"))):
        assert [(h.id, h.points) for h in records[ex.name].hidden] == [(c.course_id, c.points)
                                                                        for c in ex.hidden_tests]
        for cell in ex.hidden_tests:
            assert not [line for line in cell.source.splitlines() if len(line.strip()) > 12 and line.strip() in text]


def test_a_released_copy_reads_as_the_exercise_without_its_hidden_tests():
    for path in sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb")):
        solution = Exercise.load(SOLUTIONS / path.name)
        copy = release_record.released_exercises(ROOT / "exercises")[solution.id]
        assert [t.course_id for t in copy.tests] == [t.course_id for t in solution.tests if not t.hidden]
        assert copy.hidden_points == solution.hidden_points
        assert copy.setup_sources == solution.setup_sources


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    from course_grader.exercise.publish import publish

    dest = tmp_path_factory.mktemp("edition") / "course"
    publish(dest)
    return dest


def test_course_check_runs_from_the_student_edition_alone(edition, tmp_path):
    """The edition's own packages (PYTHONPATH) on an answered ex02: public tests run, hidden ones counted."""
    assert not (edition / "solutions").exists()
    work = tmp_path / "work"
    work.mkdir()
    answered = answered_notebook(Exercise.load(SOLUTIONS / "ex02_diagnose.ipynb"))
    nbformat.write(answered, work / "ex02_diagnose.ipynb")
    env = {**os.environ, "PYTHONPATH": str(edition / "src")}
    done = subprocess.run([sys.executable, "-c", "import sys, compile_course.paths as p; print(p.ROOT); "
                           "from course_tools.cli import main; sys.exit(main())", "check",
                           str(work / "ex02_diagnose.ipynb")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    out = done.stdout
    assert out.splitlines()[0] == str(edition), out
    assert done.returncode == 0, out + done.stderr
    assert "as released in" in out and "public tests: 2/2 points" in out
    assert "hidden tests: 2 (4 points)" in out
    unanswered = student_notebook(Exercise.load(SOLUTIONS / "ex02_diagnose.ipynb"))
    nbformat.write(unanswered, work / "ex02_diagnose.ipynb")
    done = subprocess.run([sys.executable, "-m", "course_tools.cli", "check", str(work / "ex02_diagnose.ipynb")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 1 and "NOT ANSWERED  ex02-breaks" in done.stdout, done.stdout + done.stderr


def test_a_record_that_misses_an_exercise_is_a_clear_error(tmp_path):
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    path = tmp_path / "exercises" / release_record.RECORD
    data = json.loads(path.read_text())
    data["exercises"].pop("ex02_diagnose")
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="does not cover ex02_diagnose.ipynb"):
        release_record.released_exercises(tmp_path / "exercises")


def test_seed_from_git_records_the_versions_committed_before_the_record_existed(tmp_path, capsys):
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    shutil.copy2(SOLUTIONS / "ex02_diagnose.ipynb", course / "solutions")
    release.release_all(course / "solutions", course / "exercises")
    first = release_record.read(course / "exercises")["ex02_diagnose"].versions["ex02-categories"]
    git = ["git", "-C", str(course), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(course)], check=True)
    subprocess.run([*git, "add", "exercises/ex02_diagnose.ipynb"], check=True)
    subprocess.run([*git, "commit", "-qm", "first release"], check=True)
    source = course / "solutions" / "ex02_diagnose.ipynb"
    _edit_cell(source, "ex02-categories", Exercise.load(source).cell("ex02-categories").source + "\n# fixed")
    (course / "exercises" / release_record.RECORD).unlink()        # a record that starts after the first release
    release.release_all(course / "solutions", course / "exercises")
    assert not first & release_record.read(course / "exercises")["ex02_diagnose"].versions["ex02-categories"]
    assert release.main(["--solutions", str(course / "solutions"), "--exercises", str(course / "exercises"),
                         "--seed-from-git"]) == 0
    assert "1 earlier cell version(s) added" in capsys.readouterr().out
    seeded = release_record.read(course / "exercises")["ex02_diagnose"]
    assert first <= seeded.versions["ex02-categories"] and len(seeded.versions["ex02-categories"]) == 2
    assert not release.check_all(course / "solutions", course / "exercises")
