"""What the last ``course check`` of each exercise said, kept in the student's workspace for Lab's Exercises panel.

``course check FILE`` (from a terminal, or the panel's Check button, which runs that same command) records one
entry for a file inside the student's workspace (:func:`compile_course.workspace.workspace_dir`) in
``WORKSPACE/.course-checks.json``: the file's path in the workspace, the sha256 of the bytes checked, when, the
outcome and the public points. The panel shows it as "checked", and says when the saved notebook has changed
since. A file outside the workspace is not recorded (a check of a copy elsewhere is nobody's status). The record
is a convenience: one that cannot be written costs a note line, never the check.

The file carries its schema version; one of another version is read as empty (and rewritten on the next check).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

SCHEMA = 1
RECORD_NAME = ".course-checks.json"
LOCK_NAME = ".course-checks.lock"


class Outcome(StrEnum):
    PASSES = "passes"        # everything the grader checks in public passes
    FAILS = "fails"          # a public test fails, or an answer is missing or flagged
    REJECTED = "rejected"    # the grader would reject the file (it scores 0)


@dataclass(frozen=True)
class CheckEntry:
    path: str          # inside the workspace, '/'-separated: exercises/ex01_capture_boundary.ipynb
    sha256: str        # of the bytes checked
    checked: str       # ISO 8601, UTC
    outcome: Outcome
    earned: float      # public points earned ...
    possible: float    # ... of the public points


def _workspace(workspace: Path | None) -> Path:
    from compile_course.workspace import workspace_dir

    return Path(workspace) if workspace is not None else workspace_dir()[0]


def inside(path: Path, workspace: Path | None = None) -> str | None:
    """``path`` relative to the workspace ('/'-separated), or None when it lies outside it."""
    base = _workspace(workspace).resolve()
    try:
        return Path(os.path.realpath(path)).relative_to(base).as_posix()
    except ValueError:
        return None


def read(workspace: Path | None = None) -> dict[str, CheckEntry]:
    """``{path in the workspace: its last check}``; empty when there is no record or it is unreadable."""
    try:
        data = json.loads((_workspace(workspace) / RECORD_NAME).read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            return {}
        return {rel: CheckEntry(**{**entry, "outcome": Outcome(entry["outcome"])})
                for rel, entry in data["checks"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def record(path: Path, sha256: str, outcome: Outcome, earned: float, possible: float,
           workspace: Path | None = None) -> CheckEntry | None:
    """Store the check of ``path``; None (nothing written) when the file is not in the workspace.
    Raises ``OSError`` when the record cannot be written."""
    base = _workspace(workspace)
    rel = inside(path, base)
    if rel is None:
        return None
    entry = CheckEntry(rel, sha256, datetime.now(UTC).isoformat(timespec="seconds"), outcome, earned, possible)
    with open(base / LOCK_NAME, "a") as lock:    # two checks at once: one writes after the other
        os.chmod(lock.fileno(), 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        checks = {k: asdict(v) for k, v in read(base).items()}
        checks[rel] = asdict(entry)
        fd, tmp = tempfile.mkstemp(prefix=f"{RECORD_NAME}.", dir=base)   # 0600, as the workspace's files are
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"schema": SCHEMA, "checks": checks}, fh, indent=1)
            os.replace(tmp, base / RECORD_NAME)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return entry
