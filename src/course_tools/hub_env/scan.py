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


def trusted_files(prefix: Path) -> tuple[set[str], int]:
    """Files (as path strings) of the third-party packages installed in ``prefix`` that are as their RECORD
    lists them. Strings, not ``Path`` objects: tens of thousands of files, and pathlib was most of the time."""
    trusted: set[str] = set()
    packages = 0
    for site in sorted(Path(prefix).glob("lib/python*/site-packages")):
        for dist in md.distributions(path=[str(site)]):
            if canonical(dist.metadata["Name"]) == COURSE_DIST or not dist.files:
                continue
            packages += 1
            for entry in dist.files:
                path = os.path.normpath(os.path.join(site, str(entry)))
                if path.endswith(".pyc") and f"{os.sep}__pycache__{os.sep}" in path:
                    trusted.add(path)
                elif entry.size is not None:
                    try:
                        if os.stat(path).st_size == entry.size:
                            trusted.add(path)
                    except OSError:
                        continue
    return trusted, packages


def module_patterns(folders: set[str], files: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(parts a path may contain, endings a path may have)`` that name an instructor-only module: its
    folder, the file itself, or the bytecode Python compiles for it (``__pycache__/NAME.cpython-*.pyc``)."""
    parts = [f"/{folder}/" for folder in sorted(folders)]
    endings = []
    for name in sorted(files):
        folder, _, stem = name[:-len(".py")].rpartition("/")
        endings.append(f"/{name}")
        parts.append(f"/{folder}/__pycache__/{stem}." if folder else f"/__pycache__/{stem}.")
    return tuple(parts), tuple(endings)


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
    parts, endings = module_patterns(folders, files)
    problems, read = [], 0
    top = str(prefix)
    for folder, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, top)
            if any(p in f"/{rel}" for p in parts) or f"/{rel}".endswith(endings):
                problems.append(f"{rel}: an instructor-only module (a file the edition leaves out)")
                continue
            if path in trusted or os.path.islink(path) or not os.path.isfile(path):
                continue
            if (size := os.path.getsize(path)) > MAX_READ_BYTES:
                problems.append(f"{rel}: {size} bytes in no package's RECORD (not read)")
                continue
            with open(path, "rb") as fh:
                data = fh.read()
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
