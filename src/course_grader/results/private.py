"""Output that only the grader (root) may read: folders 0700, files 0600.

Kernels of every grading run execute as leased unprivileged uids, and several runs
may go on at once on one machine. A run's outputs (gradebook, grades.csv,
review.csv with free-text answers, feedback pages) and the folder holding its
compile cache must not be reachable from any of them.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents, each 0700) and make it 0700."""
    path = Path(path)
    missing = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(folder, DIR_MODE)
    os.chmod(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty if missing (0600 from the start), or make an existing one 0600."""
    path = Path(path)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, FILE_MODE)
    os.close(fd)
    os.chmod(path, FILE_MODE)
    return path


def seal_tree(root: Path) -> None:
    """Every folder under ``root`` 0700 and every file 0600 (symlinks are left alone)."""
    root = Path(root)
    if not root.is_dir() or root.is_symlink():
        return
    os.chmod(root, DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            p = os.path.join(folder, name)
            if not os.path.islink(p):
                os.chmod(p, DIR_MODE)
        for name in files:
            p = os.path.join(folder, name)
            if not os.path.islink(p):
                os.chmod(p, FILE_MODE)


HOME_GRADING = Path("~/course-grading")   # the grading folder of a user who cannot write the checkout


def grading_root() -> tuple[Path, str]:
    """``(folder, why)``: where a class's results and the warm-up store go by default.

    ``build/grading/`` in the checkout; for a user who cannot write there (an instructor grading
    with a course someone else installed), ``~/course-grading/``, and ``why`` says so."""
    from compile_course.paths import BUILD, writable

    base = BUILD / "grading"
    if writable(base):
        return base, ""
    home = HOME_GRADING.expanduser()
    return home, f"{base} is not writable by you: results go under {home}"
