"""``course publish DEST``: the student edition, a git repository at DEST with one commit per publish.

The edition is what students get their course from: a clone, the workspace, or the nbgitpuller link
of a hub. It holds the lessons, the released exercises (with the release record
``exercises/.release-record.json``: what ``course check`` knows of the hidden tests, their ids and
points),
the student guide, the course's packages (what ``course check``, ``course submit`` and ``course lab``
run), the requirements and the set-up. It never holds ``solutions/``, ``tests/`` (the samples
among them), the sample maker, ``build/`` or the course's own git history: the edition's history is
its own, one commit per publish, so nbgitpuller's merge brings each update to a student's copy.

What goes in is an allow-list (:data:`EDITION`), not a list of what to leave out, so a new
instructor folder stays out until someone decides otherwise. Before anything is committed, every
line of every hidden test (of the solutions given) is looked for in every file of the new edition
(:func:`leaks`); one found stops the publish and names the file. The git work is done with git
itself (``git add -A``, ``git commit``), run as a subprocess: DEST stays an ordinary repository that
``git clone`` and nbgitpuller read.

Refusals (exit 2, nothing changed): the exercises are not the release of the solutions (run
``course release``), DEST exists and is not an edition this command made, DEST has changes nobody
committed. A publish that changes nothing makes no commit.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compile_course.paths import ROOT
from course_grader.errors import PublishError

EDITION_MARK = ".course-edition.json"   # at DEST's root: marks a repository course publish made
BRANCH = "main"
MIN_LEAK_CHARS = 12   # hidden-test lines shorter than this ("wrong = []") are too common to name a leak
# a line shorter than this that the course's own code also holds is plain Python ("problems = []",
# "for line in message.splitlines():"), not a hidden test's; longer lines (a key, test data) always count
GENERIC_CODE_CHARS = 48

# (glob under the checkout, what it is). "**" below a folder takes every file under it.
EDITION: tuple[tuple[str, str], ...] = (
    ("notebooks/[0-9][0-9]_*.ipynb", "the lessons"),
    ("exercises/ex[0-9][0-9]_*.ipynb", "the released exercises"),
    ("exercises/.released.json", "what the release wrote (`course release` keeps hand edits)"),
    ("exercises/.release-record.json", "the release record: hidden tests' ids and points, every cell version"),
    ("docs/students.md", "the student guide"),
    ("src/**", "the course's packages: the helpers, `course lab`/`workspace`, the grader's steps that "
               "`course check` and `course submit` run, the hub client"),
    ("lab/**", "JupyterLab's settings for the course"),
    ("requirements.txt", "the pins"),
    ("requirements.lock", "every package's version"),
    ("pyproject.toml", "the package"),
    ("environment.yml", "the pins for conda"),
    ("Makefile", "the set-up (`make lab`)"),
)
# Never in the edition, whatever the globs above take.
NEVER = ("src/course_grader/samples/**", "**/__pycache__/**", "**/*.pyc", "**/*.egg-info/**",
         "**/.ipynb_checkpoints/**")

README = """\
# torch.compile contracts: the student edition

The lessons (`notebooks/`) and exercises (`exercises/`) of the course, with what you need to run,
check and hand them in. How to work, check and hand in: **[the student guide](docs/students.md)**.

```bash
make lab                                                   # set up .venv once, then JupyterLab at lesson 01
.venv/bin/course check work/exercises/ex02_diagnose.ipynb  # what the grader will say, hidden tests aside
```

This repository is published from the instructor's course by `course publish`; each update is one
commit, and `git pull` (or the hub's nbgitpuller link) brings it in without touching your workspace.
"""

GITIGNORE = """\
.venv/
build/
work/
handin/
__pycache__/
*.egg-info/
.ipynb_checkpoints/
*.pyc
"""


@dataclass
class Published:
    dest: Path
    files: int
    commit: str          # the edition's HEAD after the publish
    changed: bool        # False: the edition already held exactly this
    scanned: str = ""    # what was looked for: "N lines of M hidden tests in SOLUTIONS", or why nothing


# ---------------------------------------------------------------- what goes in


def _matches(rel: str, pattern: str) -> bool:
    if pattern.endswith("/**"):
        return rel.startswith(pattern[:-2]) or fnmatch.fnmatchcase(rel, pattern)
    return fnmatch.fnmatchcase(rel, pattern)


def edition_files(root: Path = ROOT) -> list[str]:
    """Every file of the checkout ``root`` that the edition holds, as sorted relative paths."""
    root = Path(root)
    chosen: set[str] = set()
    for pattern, _ in EDITION:
        top = pattern.split("/", 1)[0]
        if "/" not in pattern:
            if (root / pattern).is_file():
                chosen.add(pattern)
            continue
        base = root / top
        if not base.is_dir():
            continue
        for folder, _dirs, files in os.walk(base):
            for name in files:
                path = Path(folder) / name
                if path.is_symlink() or not path.is_file():
                    continue
                rel = path.relative_to(root).as_posix()
                if _matches(rel, pattern):
                    chosen.add(rel)
    return sorted(r for r in chosen if not any(_matches(r, p) or fnmatch.fnmatchcase(r, p) for p in NEVER))


# ---------------------------------------------------------------- what must never go in


def hidden_lines(solutions: Path, root: Path | None = None) -> dict[str, str]:
    """``{line: "exNN hidden-test id"}``: every line of every hidden test in ``solutions`` that is long
    enough to name a leak and that is not public anyway: no released cell of any exercise and no lesson
    (``root/notebooks``) holds it (``for name in FUNCTIONS:``), and it is not a short line of plain
    Python that the course's own code (``root/src``) has too (``problems = []``). ``root``: the course's
    checkout, by default the folder holding ``solutions``."""
    from course_grader.exercise.model import CellKind, load_exercises
    from course_grader.exercise.release import student_notebook

    exercises = load_exercises(solutions)
    public: set[str] = set()
    for ex in exercises.values():
        public |= {line.strip() for cell in student_notebook(ex).cells for line in "".join(cell.source).splitlines()}
    root = Path(root or Path(solutions).parent)
    for lesson in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        try:
            cells = json.loads(lesson.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue
        public |= {line.strip() for cell in cells for line in "".join(cell.get("source", "")).splitlines()}
    code: set[str] = set()
    for source in sorted((root / "src").rglob("*.py")):
        try:
            code |= {line.strip() for line in source.read_text(encoding="utf-8").splitlines()
                     if len(line.strip()) < GENERIC_CODE_CHARS}
        except (OSError, UnicodeDecodeError):
            continue
    out: dict[str, str] = {}
    for ex in exercises.values():
        for cell in ex.cells:
            if cell.kind is not CellKind.HIDDEN_TEST:
                continue
            for line in cell.source.splitlines():
                text = line.strip()
                if len(text) >= MIN_LEAK_CHARS and text not in public and text not in code:
                    out.setdefault(text, f"{ex.id} {cell.course_id}")
    return out


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    if isinstance(node, dict):
        return [s for item in node.values() for s in _strings(item)]
    return []


def file_lines(data: bytes) -> set[str]:
    """Every line of a file, stripped; for JSON (a notebook, a record), every line of every string in it too."""
    text = data.decode("utf-8", errors="replace")
    lines = {line.strip() for line in text.splitlines()}
    if text.lstrip().startswith(("{", "[")):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        lines |= {line.strip() for s in _strings(parsed) for line in s.splitlines()}
    return lines


def leaks(texts: dict[str, bytes], lines: dict[str, str]) -> list[str]:
    """``"FILE: holds a line of exNN HIDDEN-TEST (...)"`` for each of ``texts`` (name -> bytes) that holds,
    as a whole line, one of ``lines`` (:func:`hidden_lines`)."""
    found = []
    for name, data in texts.items():
        if hit := sorted(file_lines(data) & lines.keys()):
            found.append(f"{name}: holds a line of {lines[hit[0]]} ({hit[0][:60]!r})")
    return found


# ---------------------------------------------------------------- git


def _git(dest: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    command = ["git", "-C", str(dest), "-c", "user.name=course publish", "-c", "user.email=course-publish@localhost",
               "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise PublishError(f"git {' '.join(args[:2])} in {dest} failed: {done.stderr.strip()[:400]}")
    return done


def _source_commit(root: Path) -> str:
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if done.returncode != 0:
        return "no git commit"
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "notebooks", "exercises",
                            "docs/students.md", "src"], capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" with uncommitted changes" if dirty else "")


def _prepare(dest: Path) -> None:
    """Make ``dest`` an edition repository, or check that it is one with nothing uncommitted."""
    if not dest.exists() or (dest.is_dir() and not any(dest.iterdir())):
        dest.mkdir(parents=True, exist_ok=True)
        _git(dest, "init", "-q", "-b", BRANCH)
        return
    if not dest.is_dir():
        raise PublishError(f"{dest} is a file, not a folder")
    if not (dest / ".git").exists() or not (dest / EDITION_MARK).is_file():
        raise PublishError(f"{dest} is not empty and is not a student edition made by course publish "
                           f"(no {EDITION_MARK}); give a new or empty folder")
    if status := _git(dest, "status", "--porcelain").stdout.strip():
        raise PublishError(f"{dest} has changes nobody committed ({status.splitlines()[0].strip()}...); "
                           "an edition is only ever changed by course publish: commit or discard them first")
    branch = _git(dest, "symbolic-ref", "--short", "HEAD", check=False).stdout.strip()
    if branch != BRANCH:
        raise PublishError(f"{dest} is on branch {branch or '(none)'}, not {BRANCH}")


def publish(dest: Path, root: Path = ROOT, solutions: Path | None = None) -> Published:
    """Write the edition of checkout ``root`` into the repository ``dest`` and commit it.

    ``solutions`` (default ``root/solutions``): the hidden tests looked for in the edition. Raises
    ``PublishError`` (nothing changed) when the exercises are stale, DEST is not an edition, or a
    hidden test's line would be published."""
    from course_grader.exercise.release import check_all

    root, dest = Path(root).resolve(), Path(dest).resolve()
    solutions = Path(solutions or root / "solutions").resolve()
    if dest == root or root in dest.parents and not dest.is_relative_to(root / "build"):
        raise PublishError(f"{dest} is inside the course's checkout {root}: give a folder outside it "
                           "(or under build/)")
    if solutions.is_dir():
        if problems := check_all(solutions, root / "exercises"):
            raise PublishError(f"the exercises are not the release of {solutions} ({problems[0]}): "
                               "run course release first")
        lines = hidden_lines(solutions, root)
        scanned = f"{len(lines)} lines of {len(set(lines.values()))} hidden tests of {solutions}: none found"
    else:
        lines = {}
        scanned = f"NOT looked for hidden tests: no solutions at {solutions} (give --solutions DIR)"
    files = edition_files(root)
    if not any(f.startswith("exercises/ex") for f in files):
        raise PublishError(f"no released exercise in {root / 'exercises'}: run course release first")
    texts = {rel: (root / rel).read_bytes() for rel in files}
    texts["README.md"] = README.encode()
    texts[".gitignore"] = GITIGNORE.encode()
    source = _source_commit(root)
    # the source commit goes in the commit message only: a publish that changes no file makes no commit
    texts[EDITION_MARK] = (json.dumps({"made_by": "course publish", "edition": 1}, indent=1) + "\n").encode()
    if found := leaks(texts, lines):
        raise PublishError("a hidden test would be published: " + "; ".join(found[:5])
                           + (f" (+{len(found) - 5} more)" if len(found) > 5 else ""))
    _prepare(dest)
    # the new tree is written beside the old one, then swapped in file by file: git sees every change
    for rel in _git(dest, "ls-files", "-z").stdout.split("\0"):
        if rel and rel not in texts:
            (dest / rel).unlink(missing_ok=True)
    for rel, data in texts.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != data:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".publish-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
    _remove_empty_folders(dest)
    _git(dest, "add", "-A")
    changed = _git(dest, "diff", "--cached", "--quiet", check=False).returncode != 0 \
        or _git(dest, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode != 0
    if changed:
        _git(dest, "commit", "-q", "-m", f"Student edition of {source} (course publish)")
    head = _git(dest, "rev-parse", "--short=12", "HEAD").stdout.strip()
    return Published(dest, len(texts), head, changed, scanned)


def _remove_empty_folders(dest: Path) -> None:
    for folder, _dirs, _files in os.walk(dest, topdown=False):
        path = Path(folder)
        if ".git" in path.relative_to(dest).parts or path == dest:
            continue
        if not any(path.iterdir()):
            shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="course publish", description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dest", type=Path, help="the edition's git repository (created on the first publish)")
    p.add_argument("--solutions", type=Path, help="the solutions whose hidden tests must not be published "
                                                  "(default: solutions/ in the course folder)")
    args = p.parse_args(argv)
    try:
        done = publish(args.dest, solutions=args.solutions)
    except PublishError as exc:
        print(f"course publish: {exc}", file=sys.stderr)
        return 2
    what = f"new commit {done.commit}" if done.changed else f"unchanged, still {done.commit}"
    print(f"student edition: {done.dest} ({done.files} files, branch {BRANCH}): {what}")
    print(f"  {done.scanned}")
    print(f"  students get it with: git clone {done.dest}   (or an nbgitpuller link with repo={done.dest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
