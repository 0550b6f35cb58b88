"""What must never be in the students' environment, looked for in the environment as installed.

``course publish`` checks the edition's files before it commits them; this checks what a build put
into PREFIX, since an install can add what the source did not show (a stale ``build/`` folder that
setuptools packs, a module copied by hand, a file planted later). Three kinds of finding:

* **an instructor-only module**: a file of the checkout's ``src/`` that the edition leaves out
  (``course_grader/samples``, the sample maker, today: publish's ``NEVER``), found under any folder;
* **a file of solutions/**: a file whose bytes are those of a file in the instructor's ``solutions/``;
* **a hidden test's line**: any line of any file (and of every string of a JSON file) that is a line of
  a hidden test, as ``course publish`` finds them (:func:`~course_grader.exercise.publish.hidden_lines`).

Every file is looked at except a third-party package's file whose size is the one its own RECORD gives
(and the bytecode pip compiled for them): those are the packages pip installed from PyPI at the lock's
versions, linked or copied unchanged. A file added or changed there has another size, or is in no
RECORD, and is read like every other.

What it does not look for: a model answer's lines (a solution cell's code without its hidden tests:
lessons and exercises show such lines too), or a hidden test rewritten so that none of its lines stays.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
from dataclasses import dataclass, field
from pathlib import Path

from compile_course.paths import ROOT
from course_grader.exercise.publish import NEVER, edition_files, file_lines, hidden_lines

from ..lock import canonical

COURSE_DIST = "compile-course"
MAX_READ_BYTES = 256 * 2**20     # a file larger than this is a third-party library, never a course file: named


@dataclass
class Audit:
    problems: list[str] = field(default_factory=list)
    scanned: str = ""


def instructor_only(root: Path = ROOT) -> tuple[set[str], set[str]]:
    """``(folders, files)`` under ``src/`` that the checkout ``root`` has and its edition leaves out, as paths
    of an installed package (``course_grader/samples``, ``course_grader/samples/demo.py``)."""
    root = Path(root)
    folders = {p[len("src/"):-len("/**")] for p in NEVER if p.startswith("src/") and p.endswith("/**")}
    published = {rel for rel in edition_files(root) if rel.startswith("src/")}
    files = set()
    for path in (root / "src").rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in rel or ".egg-info/" in rel or rel in published:
            continue
        files.add(rel[len("src/"):])
    return folders, files


def trusted_files(prefix: Path) -> tuple[set[Path], int]:
    """Files of the third-party packages installed in ``prefix`` that are as their RECORD lists them."""
    trusted: set[Path] = set()
    packages = 0
    for site in sorted(Path(prefix).glob("lib/python*/site-packages")):
        for dist in md.distributions(path=[str(site)]):
            if canonical(dist.metadata["Name"]) == COURSE_DIST or not dist.files:
                continue
            packages += 1
            for entry in dist.files:
                path = Path(os.path.normpath(site / entry))
                if path.suffix == ".pyc" and "__pycache__" in path.parts:
                    trusted.add(path)
                elif entry.size is not None and path.is_file() and path.stat().st_size == entry.size:
                    trusted.add(path)
    return trusted, packages


def _module_hit(rel: str, folders: set[str], files: set[str]) -> str | None:
    for folder in folders:
        if f"/{folder}/" in f"/{rel}":
            return folder
    for name in files:
        stem = name[:-3]
        cached = f"{Path(stem).parent.as_posix()}/__pycache__/{Path(stem).name}."
        if rel.endswith(f"/{name}") or f"/{cached}" in f"/{rel}":
            return name
    return None


def audit(prefix: Path, root: Path = ROOT, solutions: Path | None = None) -> Audit:
    """Look for the three kinds of finding in every file of the environment at ``prefix``."""
    prefix, root = Path(prefix), Path(root)
    solutions = Path(solutions or root / "solutions")
    folders, files = instructor_only(root)
    readable = solutions.is_dir() and os.access(solutions, os.R_OK | os.X_OK)
    lines = hidden_lines(solutions, root) if readable else {}
    answers = {}
    if readable:
        for path in sorted(solutions.rglob("*")):
            if path.is_file():
                answers[hashlib.sha256(path.read_bytes()).hexdigest()] = path.relative_to(solutions.parent).as_posix()
    trusted, packages = trusted_files(prefix)
    problems, read = [], 0
    for folder, _dirs, names in os.walk(prefix):
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(prefix).as_posix()
            if (hit := _module_hit(rel, folders, files)) is not None:
                problems.append(f"{rel}: an instructor-only module ({hit}, which the edition leaves out)")
                continue
            if path in trusted or path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size > MAX_READ_BYTES:
                problems.append(f"{rel}: {path.stat().st_size} bytes in no package's RECORD (not read)")
                continue
            data = path.read_bytes()
            read += 1
            if (same := answers.get(hashlib.sha256(data).hexdigest())) is not None:
                problems.append(f"{rel}: the same bytes as {same}")
                continue
            if lines and (hit_lines := sorted(file_lines(data) & lines.keys())):
                problems.append(f"{rel}: holds a line of {lines[hit_lines[0]]} ({hit_lines[0][:60]!r})")
    what = (f"{len(lines)} lines of {len(set(lines.values()))} hidden tests and {len(answers)} files of {solutions}"
            if readable else f"NO hidden test or solution looked for: {solutions} is not readable here")
    scanned = (f"{read} files read for {what}, {len(folders) + len(files)} instructor-only modules looked for "
               f"everywhere; {len(trusted)} files of {packages} third-party packages as their RECORDs list them: "
               f"{'none found' if not problems else f'{len(problems)} found'}")
    return Audit(problems, scanned)
