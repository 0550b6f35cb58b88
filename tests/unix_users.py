"""Real Unix users for the hub's tests (root only), created for one test run and removed after it.

A class hub in users mode logs students in with PAM and runs each student's server as that
student, so its tests need real accounts with passwords. :func:`class_users` creates them
(``useradd``, a password by ``chpasswd``), lets each one pass through the closed folders on the way
to this venv's Python (one POSIX ACL entry per folder, written by ``tests/ordinary_user.py``'s
``allow_traverse``) and, when the block ends, removes the accounts, their homes and every ACL entry
it added, so the machine is left as it was. Every name must start with ``hub-``.

Making and removing users, and the ACL entries, happen under ``ordinary_user.acl_lock``, the lock
every test that makes users takes: an ACL is read, changed and written back, so two test workers
doing it at once on the same folder (``/root``, say) would each drop the other's entry, and that
worker's users could no longer reach the venv.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ordinary_user import _closed_folders, acl_lock, allow_traverse, remove_traverse

PREFIX = "hub-"


@dataclass(frozen=True)
class UnixUser:
    name: str
    password: str
    uid: int
    home: Path


def why_not() -> str:
    """Empty when this machine can make the tests' users, else why not."""
    if os.geteuid() != 0:
        return "needs root: the hub's users mode runs each student's server as a real Unix user"
    missing = [t for t in ("useradd", "userdel", "chpasswd", "runuser") if shutil.which(t) is None]
    return f"missing {', '.join(missing)}" if missing else ""


def remove(name: str) -> None:
    if not name.startswith(PREFIX):
        raise ValueError(f"{name}: the hub's tests only remove users named {PREFIX}*")
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)   # this user's processes only
    subprocess.run(["userdel", "--remove", name], capture_output=True)


@contextlib.contextmanager
def class_users(names: list[str]) -> Iterator[dict[str, UnixUser]]:
    """Create ``names`` (each ``hub-*``), yield them by name, remove them and their ACL entries."""
    for name in names:
        if not name.startswith(PREFIX):
            raise ValueError(f"{name}: test users of the hub must be named {PREFIX}*")
    users: dict[str, UnixUser] = {}
    opened: list[tuple[Path, int]] = []
    try:
        with acl_lock():
            _create(names, users, opened)
        yield users
    finally:
        with acl_lock():
            for folder, uid in opened:
                with contextlib.suppress(OSError):
                    remove_traverse(folder, uid)
            for name in users:
                remove(name)


def _create(names: list[str], users: dict[str, UnixUser], opened: list[tuple[Path, int]]) -> None:
    """Make each user, with a password and passage to this venv's Python; record them as they are made."""
    interpreter = Path(os.path.realpath(sys.executable))
    for name in names:
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            remove(name)                              # left by a run that was killed
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
        password = secrets.token_urlsafe(12)
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
        entry = pwd.getpwnam(name)
        for folder in _closed_folders(interpreter, entry.pw_uid, entry.pw_gid):
            allow_traverse(folder, entry.pw_uid)
            opened.append((folder, entry.pw_uid))
        users[name] = UnixUser(name, password, entry.pw_uid, Path(entry.pw_dir))
