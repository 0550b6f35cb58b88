"""Confinement policy: what every run hides, how this machine confines runs, which notices weaken a run.

Decided once, on the grader's side, before any run starts: the instructor folders no run ever
sees (``default_hidden``, the one list; ``git_dirs`` finds a worktree's repository), whether this
machine confines runs as root, in user namespaces or not at all (``confinement_mode``), whether
grading may start (``confinement_refusal``), and which of a run's notices mean part of its
confinement is missing (``weakened``). It applies nothing itself: ``confine.py`` does, in the run.
"""

from __future__ import annotations

import os
from pathlib import Path

from course_grader.sandbox.notices import Weakening
from course_grader.status import Confinement


def _checkout() -> Path:
    from compile_course.paths import ROOT

    return ROOT


def git_dirs(checkout: Path) -> list[Path]:
    """Where the checkout's repository really is when ``.git`` is a file (``git worktree``, a submodule):
    the folder that file names and the common folder that one shares (the main clone's ``.git``, which
    holds every commit, solutions included). Empty when ``.git`` is a folder or absent."""
    dot_git = checkout / ".git"
    try:
        head = dot_git.read_text(errors="replace").splitlines()[0] if dot_git.is_file() else ""
    except (OSError, IndexError):
        return []
    if not head.startswith("gitdir:"):
        return []
    gitdir = (checkout / head[len("gitdir:"):].strip()).resolve()
    found = [gitdir]
    try:
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        common = None
    if common is not None and common != gitdir:
        found.append(common)
    return found


def default_hidden() -> list[Path]:
    """Instructor folders of the checkout that no run ever sees (and its repository, wherever it is)."""
    root = _checkout()
    return [root / "solutions", root / ".git", *git_dirs(root), root / "build", root / "tests",
            root / "src" / "course_grader"]


def harness_dir() -> Path:
    return _checkout() / "src" / "course_grader" / "harness"


_USERNS_REFUSAL: list[str | None] = []   # the probe's answer, once per process


def confinement_mode(unconfined: bool = False) -> Confinement:
    """How runs are confined here: root, user namespaces (not root), or none."""
    if os.geteuid() == 0:
        return Confinement.ROOT
    if not _USERNS_REFUSAL:
        from course_grader.sandbox.confine import user_namespaces_refusal

        _USERNS_REFUSAL.append(user_namespaces_refusal())
    return Confinement.USERNS if _USERNS_REFUSAL[0] is None else Confinement.NONE


def confinement_refusal(where: str, unconfined: bool) -> str | None:
    """Why grading must not start here (``where``: "this process", "this worker"), or None.

    Root confines each run under its own uid; an ordinary user confines it in user namespaces.
    Where neither is possible a run would keep the grader's own uid and see the whole file system:
    its code could read the hidden tests and write the run's output. Only ``--unconfined`` accepts that."""
    if unconfined or confinement_mode() is not Confinement.NONE:
        return None
    return (f"grading cannot confine students' code: {where} is not root, and {_USERNS_REFUSAL[0]}. Run it as "
            "root, turn user namespaces on, or grade anyway with --unconfined, where students' code could read "
            "the hidden tests and write the run's output folder (docs/sandbox.md, \"Without root\")")


def weakened(notices: list[str], confinement: Confinement = Confinement.ROOT) -> list[str]:
    """The notices that say part of a confined run's confinement is missing (a ``Weakening``: a namespace,
    a hidden folder, a private /tmp). Grading must not go on with them. None count when unconfined
    (--unconfined, where user namespaces are off): the whole sandbox is weaker by design, and says so."""
    if confinement == Confinement.NONE:
        return []
    return [n for n in notices if Weakening.of(n) is not None]

