"""``course publish DEST``: the student edition holds no hidden test, in its tree or its git history,
and nbgitpuller brings a second publish into a student's copy without touching their work."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from course_grader.errors import PublishError
from course_grader.exercise.model import CellKind, load_exercises
from course_grader.exercise.publish import EDITION_MARK, hidden_lines, leaks, publish

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = ROOT / "solutions"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def git_objects(repo: Path) -> dict[str, bytes]:
    """Every object in the repository's store (blobs, trees, commits), by id, decompressed by git."""
    listing = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch-check"],
                             capture_output=True, text=True, check=True).stdout.split()
    ids = listing[0::3]
    out = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], input="\n".join(ids).encode() + b"\n",
                         capture_output=True, check=True).stdout
    objects, at = {}, 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        oid, _kind, size = out[at:header_end].split()
        start = header_end + 1
        objects[oid.decode()] = out[start:start + int(size)]
        at = start + int(size) + 1
    return objects


def tree_files(dest: Path) -> dict[str, bytes]:
    return {p.relative_to(dest).as_posix(): p.read_bytes()
            for p in dest.rglob("*") if p.is_file() and ".git" not in p.relative_to(dest).parts}


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("edition") / "course"
    publish(dest)
    return dest


def test_the_lines_looked_for_cover_every_hidden_test():
    """The scan can fail: each hidden test of the course gives it lines, and a solution notebook hits."""
    lines = hidden_lines(SOLUTIONS)
    hidden = [(ex.id, c.course_id) for ex in load_exercises(SOLUTIONS).values() for c in ex.cells
              if c.kind is CellKind.HIDDEN_TEST]
    assert hidden
    assert {f"{e} {c}" for e, c in hidden} == set(lines.values())
    solution = next(SOLUTIONS.glob("ex02_*.ipynb"))
    assert leaks({solution.name: solution.read_bytes()}, lines)


def test_edition_holds_the_course_and_nothing_of_the_instructors(edition):
    files = tree_files(edition)
    for wanted in ("notebooks/01_lesson_goals.ipynb", "exercises/ex02_diagnose.ipynb", "exercises/.release-record.json",
                   "docs/students.md", "src/course_grader/ui/check.py", "src/compile_course/workspace.py",
                   "requirements.txt", "requirements.lock", "pyproject.toml", "README.md", EDITION_MARK):
        assert wanted in files, wanted
    tops = {name.split("/", 1)[0] for name in files}
    assert not tops & {"solutions", "tests", "build", "scripts", "work", "handin"}, tops
    assert not [n for n in files if n.startswith("src/course_grader/samples/") or "__pycache__" in n]
    assert sorted(git(edition, "ls-files").split()) == sorted(files)


def test_no_hidden_test_line_in_the_tree_or_the_git_objects(edition):
    lines = hidden_lines(SOLUTIONS)
    assert not leaks(tree_files(edition), lines)
    objects = git_objects(edition)
    assert len(objects) > len(tree_files(edition))      # blobs, trees and the commit were all read
    assert not leaks(objects, lines)


def _copy_course(root: Path) -> Path:
    """A checkout of the course to publish from, in ``root``: what the edition takes, plus the solutions."""
    for name in ("notebooks", "exercises", "solutions", "src", "lab", "docs"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("requirements.txt", "requirements.lock", "pyproject.toml", "Makefile"):
        shutil.copy2(ROOT / name, root / name)
    return root


def test_publish_refuses_a_leak_and_changes_nothing(tmp_path):
    root = _copy_course(tmp_path / "course")
    hidden = next(iter(hidden_lines(root / "solutions")))
    with (root / "docs" / "students.md").open("a") as fh:
        fh.write(f"\n    {hidden}\n")
    dest = tmp_path / "edition"
    with pytest.raises(PublishError, match="a hidden test would be published: docs/students.md"):
        publish(dest, root=root)
    assert not dest.exists()


def test_refuses_a_folder_that_is_not_an_edition(tmp_path):
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(PublishError, match="not a student edition"):
        publish(dest)
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]


def test_one_commit_per_publish_and_nbgitpuller_keeps_the_students_work(tmp_path):
    from nbgitpuller.pull import GitPuller

    root = _copy_course(tmp_path / "course")
    dest = tmp_path / "edition"
    first = publish(dest, root=root)
    assert first.changed and len(git(dest, "log", "--format=%H").split()) == 1
    assert not publish(dest, root=root).changed            # nothing new: no commit

    student = tmp_path / "alice" / "course"
    for _ in GitPuller(str(dest), str(student), branch="main", depth=0).pull():
        pass
    answer = student / "exercises" / "ex01_capture_boundary.ipynb"
    answer.write_text(answer.read_text().replace("replace this line with your answer", "my answer", 1))

    guide = root / "docs" / "students.md"
    guide.write_text(guide.read_text() + "\nA course update.\n")
    second = publish(dest, root=root)
    assert second.changed and len(git(dest, "log", "--format=%H").split()) == 2
    for _ in GitPuller(str(dest), str(student), branch="main", depth=0).pull():
        pass
    assert "A course update." in (student / "docs" / "students.md").read_text()
    assert "my answer" in answer.read_text()
