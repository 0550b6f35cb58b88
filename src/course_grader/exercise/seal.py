"""``course seal``: close the instructor's folders of a shared checkout to everyone but their owner.

A checkout that students use on a shared machine (they run its ``.venv``, and ``course workspace``
copies its lessons and exercises to their homes) also holds what they must never read. Found by
looking for every hidden test's lines in every file of a checkout (``publish.hidden_lines``):

* ``solutions/``: every hidden test and model answer;
* ``tests/``: the bundled samples (model answers among them) and test data taken from hidden tests;
* ``build/``: grading runs, their caches and feedback pages, executed solutions;
* the git store (``.git``, or a worktree's common folder): every earlier version of all of it;
* ``src/course_grader/samples/``: the sample maker (the hostile answers it writes).

``course seal`` makes each of them ``0700`` (a folder) or ``0600`` (a file), owned as it is (in
``build/``, every entry but the hub's student edition and its git config, :data:`BUILD_SHARED`;
``build/`` itself can then be passed, not listed). A sealed checkout stays sealed: every later
``course`` command of its owner closes what it added when it ends (:func:`keep_sealed`, called by the
``course`` CLI), and a student's command in an unsealed shared checkout says so (:func:`unsealed_warning`). The
owner (the instructor, or root) works on as before; nobody else can list, read or pass through
them. What students need stays as it was: lessons, exercises and their release record, the guide,
the packages. ``course seal --check`` changes nothing and exits 1 when something is still open.

What it does not do: close a copy made elsewhere (a clone a student made before, a backup), or
guard a checkout whose owner is a student's own account. Students get their course from the
student edition (``course publish``); this is for the checkout the class shares.
"""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
from pathlib import Path

from compile_course.paths import ROOT

INSTRUCTOR_ONLY = ("solutions", "tests", "build", ".git", "src/course_grader/samples")
DIR_MODE, FILE_MODE = 0o700, 0o600
# build/ holds two things students must reach on a hub (hub/spawner_config.py): the student edition the
# nbgitpuller link clones, and the students' git config naming it safe. build/ itself becomes 0711
# (passable, not listable) and every other entry in it owner-only.
BUILD_SHARED = ("edition", "hub-shared")
PASS_ONLY = 0o711


def _git_store(root: Path) -> Path | None:
    """The folder git keeps the checkout's history in, when ``.git`` is a worktree's pointer file."""
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                          capture_output=True, text=True)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def instructor_paths(root: Path = ROOT) -> list[Path]:
    """Every existing path of ``root`` that only its owner may read (``build/``'s entries one by one,
    all but :data:`BUILD_SHARED`)."""
    root = Path(root)
    paths = []
    for rel in INSTRUCTOR_ONLY:
        path = root / rel
        if rel == "build" and path.is_dir() and not path.is_symlink():
            paths += sorted(p for p in path.iterdir() if p.name not in BUILD_SHARED)
        elif os.path.lexists(path):
            paths.append(path)
    if (root / ".git").is_file() and (store := _git_store(root)):
        paths.append(store)
    return paths


def _wanted(path: Path, mode: int) -> int:
    return DIR_MODE if path.is_dir() else (mode & 0o100) | FILE_MODE


def still_open(root: Path = ROOT) -> list[str]:
    """``"PATH: mode 0755"`` for each instructor path that others can still read or pass through."""
    out = []
    build = Path(root) / "build"
    if build.is_dir() and stat.S_IMODE(build.stat().st_mode) & 0o066:
        out.append(f"{build}: mode {stat.S_IMODE(build.stat().st_mode):04o} (others can list it)")
    for path in instructor_paths(root):
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            out.append(f"{path}: mode {mode:04o}")
    return out


def seal(root: Path = ROOT) -> list[Path]:
    """Close every instructor path of ``root`` to all but its owner; returns what was changed."""
    changed = []
    build = Path(root) / "build"
    if build.is_dir() and not build.is_symlink() and stat.S_IMODE(build.stat().st_mode) != PASS_ONLY:
        os.chmod(build, PASS_ONLY)
        changed.append(build)
    for path in instructor_paths(root):
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode != _wanted(path, mode):
            os.chmod(path, _wanted(path, mode))
            changed.append(path)
    return changed


def is_sealed(root: Path = ROOT) -> bool:
    """Whether the owner has sealed ``root``: its ``solutions/`` is closed to others (``course seal`` closes it
    first among the instructor's folders, and nothing but the owner's ``chmod`` opens it again)."""
    solutions = Path(root) / "solutions"
    return solutions.is_dir() and not stat.S_IMODE(solutions.stat().st_mode) & 0o077


def keep_sealed(root: Path = ROOT) -> list[Path]:
    """After a command of the checkout's owner: close again what it added to a sealed checkout (a new
    entry of ``build/`` is made with the owner's umask, open to all). Nothing for another user's command,
    nor in a checkout that was never sealed (a maintainer's own clone)."""
    root = Path(root)
    try:
        if os.geteuid() != root.stat().st_uid or not is_sealed(root) or not still_open(root):
            return []
        return seal(root)
    except OSError:
        return []


def unsealed_warning(root: Path = ROOT) -> str | None:
    """For a student's command in a checkout they share: the line that says its instructor's folders are
    open to them, or None (their own clone, or a sealed checkout)."""
    root = Path(root)
    try:
        owner = root.stat().st_uid
        if os.geteuid() == owner or not (root / "solutions").exists():
            return None
        problems = still_open(root)
    except OSError:
        return None
    if not problems:
        return None
    try:
        import pwd
        name = pwd.getpwuid(owner).pw_name
    except (KeyError, ImportError):
        name = f"uid {owner}"
    return (f"note: this course checkout ({root}) is shared, and its solutions and hidden tests are readable "
            f"by every user ({len(problems)} folder(s) open). Its owner, {name}, should run `course seal`; "
            "your own work is not affected.")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="course seal", description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if something is still open")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.check:
        problems = still_open(args.root)
        for line in problems:
            print(f"  open to others: {line}")
        print("the instructor's folders are closed to others" if not problems
              else f"{len(problems)} instructor folder(s) readable by others: run course seal")
        return 1 if problems else 0
    try:
        changed = seal(args.root)
    except OSError as exc:
        print(f"course seal: {exc} (run it as the checkout's owner)", file=sys.stderr)
        return 2
    for path in changed:
        print(f"  closed to others: {path}")
    print(f"course seal: {len(changed)} changed; only their owner can read "
          + ", ".join(str(p.relative_to(args.root)) if p.is_relative_to(args.root) else str(p)
                      for p in instructor_paths(args.root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
