"""Read one submission: open without following links, size before hash, then parse and validate.

:func:`read_submission` never raises for anything about the file: every way a
file can be bad (replaced since discovery, too large, not UTF-8, not JSON,
nested deeply enough to exhaust the parser, not nbformat 4, malformed cells)
becomes a ``Loaded`` with a rejection reason.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field

from .discover import Candidate

MAX_FILE_BYTES = 5 << 20      # a notebook of exercise answers is far smaller; outputs are not graded
MAX_CELLS = 2000
MAX_JSON_DEPTH = 64           # a notebook is 5 levels deep; outputs and metadata add a few
MAGIC = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"%PDF": "a PDF document",
         b"PK\x03\x04": "a zip archive", b"\x1f\x8b": "a gzip archive", b"GIF8": "a GIF image"}


@dataclass
class Loaded:
    candidate: Candidate
    sha256: str = ""                    # of the bytes read ("" when not read)
    notebook: dict | None = None        # parsed JSON, sources joined to str; None when rejected
    reason: str = ""
    notices: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.notebook is not None and not self.reason


def _depth_ok(value, limit: int) -> bool:
    """Iterative depth check: no recursion, so no RecursionError on a hostile document."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


def _bracket_depth(text: str, limit: int) -> bool:
    """Cheap pre-check before ``json.loads``: bracket nesting outside strings stays within ``limit``."""
    depth, in_str, escaped = 0, False, False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def read_bytes(candidate: Candidate, max_bytes: int = MAX_FILE_BYTES) -> tuple[bytes | None, str]:
    """``(data, "")`` or ``(None, reason)``. Opens with O_NOFOLLOW | O_NONBLOCK and checks that
    the opened file is still a regular file of acceptable size before reading a byte."""
    try:
        fd = os.open(candidate.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symbolic link, not a regular file"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return None, "unreadable: permission denied"
        return None, f"cannot open the file ({exc.strerror or exc})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file (it changed since it was found)"
        if st.st_size == 0:
            return None, "empty file"
        if st.st_size > max_bytes:
            return None, (f"file too large: {st.st_size / 2**20:.1f} MB (limit {max_bytes / 2**20:.0f} MB); "
                          "clear the outputs and resubmit")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            return None, f"file too large (it grew past {max_bytes / 2**20:.0f} MB while being read)"
        return b"".join(chunks), ""
    except OSError as exc:
        return None, f"cannot read the file ({exc.strerror or exc})"
    finally:
        os.close(fd)


def parse_notebook(raw: bytes) -> tuple[dict | None, str, list[str]]:
    """``(notebook, "", notices)`` or ``(None, reason, [])``."""
    for magic, what in MAGIC.items():
        if raw.startswith(magic):
            return None, f"not a notebook: the file is {what}", []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not a notebook: the file is not UTF-8 text", []
    if not text.strip():
        return None, "empty file", []
    if not _bracket_depth(text, MAX_JSON_DEPTH):
        return None, f"not a notebook: JSON nested more than {MAX_JSON_DEPTH} levels deep", []
    try:
        nb = json.loads(text)
    except RecursionError:
        return None, "not a notebook: JSON nested too deeply to read", []
    except ValueError as exc:
        return None, f"invalid JSON: {str(exc)[:200]}", []
    if not _depth_ok(nb, MAX_JSON_DEPTH):
        return None, f"not a notebook: JSON nested more than {MAX_JSON_DEPTH} levels deep", []
    if not isinstance(nb, dict) or ("cells" not in nb and "worksheets" not in nb):
        return None, "not a notebook: JSON without notebook cells", []
    version = nb.get("nbformat")
    if version != 4 or isinstance(version, bool):
        return None, (f"unsupported notebook format nbformat {str(version)[:20]} "
                      "(expected 4; save it with Jupyter 4+)"), []
    cells = nb.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and isinstance(c.get("cell_type"), str)
                                              for c in cells):
        return None, "not a notebook: malformed cell list", []
    if len(cells) > MAX_CELLS:
        return None, f"not a notebook of this course: {len(cells)} cells (limit {MAX_CELLS})", []
    notices: list[str] = []
    for cell in cells:
        src = cell.get("source", "")
        if isinstance(src, list):
            if not all(isinstance(s, str) for s in src):
                return None, "not a notebook: a cell source is not text", []
            cell["source"] = "".join(src)
        elif not isinstance(src, str):
            return None, "not a notebook: a cell source is not text", []
        if "\x00" in cell["source"]:
            return None, "not a notebook: a cell source contains a NUL character", []
        if not isinstance(cell.get("metadata", {}), dict):
            cell["metadata"] = {}
            notices.append("a cell's metadata was not a mapping and was ignored")
        if cell.get("id") is not None and not isinstance(cell.get("id"), str):
            cell["id"] = None
    return nb, "", notices


def read_submission(candidate: Candidate, max_bytes: int = MAX_FILE_BYTES) -> Loaded:
    """Read, hash and parse one candidate. Never raises for a bad file."""
    loaded = Loaded(candidate)
    if candidate.reason:
        loaded.reason = candidate.reason
        return loaded
    try:
        raw, reason = read_bytes(candidate, max_bytes)
        if raw is None:
            loaded.reason = reason
            return loaded
        loaded.sha256 = hashlib.sha256(raw).hexdigest()
        nb, reason, notices = parse_notebook(raw)
        loaded.notebook, loaded.reason, loaded.notices = nb, reason, notices
    except (RecursionError, MemoryError) as exc:
        loaded.notebook, loaded.reason = None, f"not a notebook this grader can read ({type(exc).__name__})"
    return loaded
