"""The student's workspace: copies of the lessons and exercises that are theirs to edit.

``work/`` (git-ignored) mirrors the checkout's layout, ``work/notebooks/NN_slug.ipynb``,
``work/exercises/exNN_slug.ipynb`` and ``work/docs/students.md``, so the links between
lessons, exercises and the student guide keep working inside it. Students open and
save only these copies; ``notebooks/`` and ``exercises/`` stay as the course ships them,
so running a lesson never dirties the repository and ``git pull`` never conflicts.

:func:`sync` brings the workspace up to date the way nbgitpuller merges a course into a
JupyterHub home, and never loses a student's work:

* a file the workspace lacks is copied in (also one the student deleted: nothing of
  theirs is lost by restoring it);
* a file the student has not changed since it was copied is replaced by a newer
  upstream version;
* a file the student changed is **never** overwritten. When upstream has a newer version
  of it, the sync says so and names the file; ``course workspace --refresh FILE`` then
  moves the student's copy aside (``NAME.mine-YYYYmmdd-HHMMSS.ipynb``) and copies the
  new version in.

The workspace is the student's alone: a folder it creates is ``0700`` and a file ``0600`` (on a
shared machine homes are often ``0755``, and a student's answers are nobody else's to read);
a sync also closes an existing workspace folder of theirs that others can still enter.

What was copied is recorded in ``work/.course-workspace.json`` (relative path -> SHA-256
of the bytes copied): a file whose bytes still have that digest is unchanged. Files the
student adds to the workspace are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .paths import ROOT, writable

WORKSPACE = ROOT / "work"
STATE_NAME = ".course-workspace.json"
HOME_FALLBACK = Path("~/torch-compile-course-work")  # when the checkout is not the student's to write
FIRST_LESSON = "notebooks/01_lesson_goals.ipynb"


def upstream_files(root: Path = ROOT) -> dict[str, Path]:
    """``{path inside the workspace: upstream file}`` for everything the workspace mirrors."""
    files: dict[str, Path] = {}
    for folder, pattern in (("notebooks", "[0-9][0-9]_*.ipynb"), ("exercises", "ex[0-9][0-9]_*.ipynb")):
        for path in sorted((root / folder).glob(pattern)):
            files[f"{folder}/{path.name}"] = path
    guide = root / "docs" / "students.md"
    if guide.is_file():
        files["docs/students.md"] = guide
    return files


def workspace_dir(explicit: str | None = None) -> tuple[Path, str]:
    """``(workspace folder, why there)``."""
    chosen = explicit or os.environ.get("COURSE_WORKSPACE")
    if chosen:
        return Path(chosen).expanduser().resolve(), "as asked"
    if writable(WORKSPACE):
        return WORKSPACE, "in the checkout"
    return HOME_FALLBACK.expanduser().resolve(), f"{ROOT} is not writable by you"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class SyncReport:
    workspace: Path
    added: list[str] = field(default_factory=list)      # copied in for the first time
    restored: list[str] = field(default_factory=list)   # copied again after the student deleted it
    updated: list[str] = field(default_factory=list)    # unchanged by the student, replaced by a newer upstream
    kept: list[str] = field(default_factory=list)       # changed by the student; upstream has a newer version
    yours: int = 0        # changed by the student, nothing new upstream
    unchanged: int = 0

    def lines(self) -> list[str]:
        out = []
        for label, names in (("new", self.added), ("restored (you had deleted it)", self.restored),
                             ("updated (you had not changed it)", self.updated)):
            out += [f"  {label}: {name}" for name in names]
        for name in self.kept:
            out.append(f"  KEPT YOURS: {name} has a newer version in the course; your copy is untouched. "
                       f"To take the new one (yours is moved aside, not deleted): course workspace --refresh {name}")
        return out


def _load_state(workspace: Path) -> dict[str, str]:
    path = workspace / STATE_NAME
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        # unreadable record: treat every existing file as the student's (never overwrite on a guess)
        return {}
    if not isinstance(state, dict):
        return {}
    return {k: v for k, v in state.items() if isinstance(k, str) and isinstance(v, str)}


PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


def private_folder(path: Path) -> Path:
    """Create ``path`` and its missing parents ``0700`` (the student's alone); return it."""
    path = Path(path)
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        os.chmod(folder, PRIVATE_DIR)   # mkdir's mode passes through the umask; this does not
    return Path(missing[0]) if missing else path


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (``0600``) through a temporary file in the same folder and a rename."""
    private_folder(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)   # mkstemp: 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _save_state(workspace: Path, state: dict[str, str]) -> None:
    _write_atomic(workspace / STATE_NAME, (json.dumps(state, indent=1, sort_keys=True) + "\n").encode())


def sync(workspace: Path = WORKSPACE, root: Path = ROOT) -> SyncReport:
    """Bring ``workspace`` up to date with the course; never overwrite a file the student changed."""
    workspace = Path(workspace)
    private_folder(workspace)
    st = workspace.stat()
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:
        os.chmod(workspace, PRIVATE_DIR)   # made before workspaces were private: close it now
    state = _load_state(workspace)
    report = SyncReport(workspace)
    for rel, source in upstream_files(root).items():
        new = source.read_bytes()
        new_digest = digest(new)
        target = workspace / rel
        recorded = state.get(rel)
        if not target.exists():
            _write_atomic(target, new)
            (report.restored if recorded else report.added).append(rel)
            state[rel] = new_digest
            continue
        current = digest(target.read_bytes())
        if current == new_digest:
            state[rel] = new_digest
            report.unchanged += 1
        elif recorded is not None and current == recorded:
            _write_atomic(target, new)   # the student never changed it: take the course's new version
            state[rel] = new_digest
            report.updated.append(rel)
        elif recorded == new_digest:
            report.yours += 1             # the student's work, and nothing new in the course
        else:
            report.kept.append(rel)       # the student's work, and a newer course version: never overwritten
    _save_state(workspace, state)
    return report


def refresh(rel: str, workspace: Path = WORKSPACE, root: Path = ROOT) -> Path | None:
    """Move the student's copy of ``rel`` aside and copy the course's version in.

    Returns where the student's copy went (None when there was none). Raises ``KeyError``
    for a path the course does not ship."""
    files = upstream_files(root)
    rel = rel.replace(os.sep, "/")
    if rel not in files:
        wanted = Path(rel).name
        matches = [k for k in files if Path(k).name == wanted]
        if len(matches) != 1:
            raise KeyError(rel)
        rel = matches[0]
    target = Path(workspace) / rel
    moved = None
    if target.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        moved = target.with_name(f"{target.stem}.mine-{stamp}{target.suffix}")
        n = 1
        while moved.exists():
            moved = target.with_name(f"{target.stem}.mine-{stamp}-{n}{target.suffix}")
            n += 1
        os.replace(target, moved)
    new = files[rel].read_bytes()
    _write_atomic(target, new)
    state = _load_state(Path(workspace))
    state[rel] = digest(new)
    _save_state(Path(workspace), state)
    return moved

