"""Find submissions and read each one safely: size cap first, then parse, then validate.

Layout (both accepted, see docs/grading.md)::

    SUBMISSIONS_DIR/alice/ex01_capture_boundary.ipynb      one folder per student
    SUBMISSIONS_DIR/alice__ex01_capture_boundary.ipynb     flat: student, two underscores, exercise

The exercise is recognised by the ``exNN`` prefix of the file name, so a
renamed copy such as ``ex01_capture_boundary (1).ipynb`` still counts.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 5 << 20   # a notebook of exercise answers is far smaller; outputs are not graded
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
EXERCISE_PREFIX = re.compile(r"^(ex\d\d)")
MAGIC = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"%PDF": "a PDF document",
         b"PK\x03\x04": "a zip archive", b"\x1f\x8b": "a gzip archive", b"GIF8": "a GIF image"}


@dataclass
class Found:
    student: str
    exercise: str          # exNN, or the file name when it names no exercise
    path: Path


@dataclass
class Loaded:
    found: Found
    sha256: str
    notebook: dict | None  # the parsed JSON, None when rejected
    reason: str = ""       # why it was rejected ("" when accepted)
    notices: tuple = ()


def discover(root: Path) -> list[Found]:
    """Every ``.ipynb`` under ``root`` with its student and exercise, sorted."""
    found = []
    root = Path(root)
    for path in sorted(root.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        rel = path.relative_to(root)
        if len(rel.parts) == 2:
            student, name = rel.parts[0], path.name
        elif len(rel.parts) == 1 and "__" in path.name:
            student, name = path.name.split("__", 1)
        else:
            student, name = "?", str(rel)
        match = EXERCISE_PREFIX.match(name)
        found.append(Found(student, match.group(1) if match else name, path))
    return found


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_submission(found: Found, max_bytes: int = MAX_FILE_BYTES) -> Loaded:
    """Read and validate one file; never raises for bad content."""
    path = found.path
    sha = sha256_file(path)

    def reject(reason: str) -> Loaded:
        return Loaded(found, sha, None, reason)

    if not STUDENT_ID.match(found.student):
        return reject(f"cannot tell the student from the path {path.name!r}: use STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb")
    size = path.stat().st_size
    if size == 0:
        return reject("empty file")
    if size > max_bytes:
        return reject(f"file too large: {size / 2**20:.1f} MB (limit {max_bytes / 2**20:.0f} MB); clear the outputs and resubmit")
    raw = path.read_bytes()
    for magic, what in MAGIC.items():
        if raw.startswith(magic):
            return reject(f"not a notebook: the file is {what}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return reject("not a notebook: the file is not UTF-8 text")
    if not text.strip():
        return reject("empty file")
    try:
        nb = json.loads(text)
    except ValueError as exc:
        return reject(f"invalid JSON: {exc}")
    if not isinstance(nb, dict) or "cells" not in nb and "worksheets" not in nb:
        return reject("not a notebook: JSON without notebook cells")
    version = nb.get("nbformat")
    if version != 4:
        return reject(f"unsupported notebook format nbformat {version} (expected 4; save it with Jupyter 4+)")
    cells = nb.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and isinstance(c.get("cell_type"), str) for c in cells):
        return reject("not a notebook: malformed cell list")
    for cell in cells:
        src = cell.get("source", "")
        if isinstance(src, list):
            if not all(isinstance(s, str) for s in src):
                return reject("not a notebook: a cell source is not text")
            cell["source"] = "".join(src)
        elif not isinstance(src, str):
            return reject("not a notebook: a cell source is not text")
        if not isinstance(cell.get("metadata", {}), dict):
            cell["metadata"] = {}
    notices = []
    try:
        import copy
        import warnings

        import nbformat

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nbformat.validate(nbformat.from_dict(copy.deepcopy(nb)))
    except Exception as exc:  # schema problems are reported, not fatal: we only need the cell sources
        notices.append(f"notebook does not fully match the nbformat schema: {str(exc).splitlines()[0][:200]}")
    return Loaded(found, sha, nb, "", tuple(notices))
