"""Real Unix users for the hub's tests (root only), created for one test run and removed after it.

A class hub in users mode logs students in with PAM and runs each student's server as that
student, so its tests need real accounts with passwords. :func:`class_users` creates them
(``useradd``, a password by ``chpasswd``), lets each one pass through the closed folders on the way
to this venv's Python (one POSIX ACL entry per folder, written by ``tests/ordinary_user.py``'s
``allow_traverse``) and, when the block ends, removes the accounts, their homes and every ACL entry
it added, so the machine is left as it was. Every name must start with ``hub-``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ordinary_user import ACL_VERSION, ACL_XATTR, MASK, USER, _acl_entries, _closed_folders, allow_traverse

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


def drop_traverse(path: Path, uid: int) -> None:
    """Remove ``uid``'s own ACL entry from ``path`` (the inverse of ``allow_traverse``)."""
    entries = [e for e in _acl_entries(path) if not (e[0] == USER and e[2] == uid)]
    if not [e for e in entries if e[0] == USER]:
        entries = [e for e in entries if e[0] != MASK]   # no named users left: the mask goes too
    blob = struct.pack("<I", ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, ACL_XATTR, blob)


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
    interpreter = Path(os.path.realpath(sys.executable))
    try:
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
        yield users
    finally:
        for folder, uid in opened:
            with contextlib.suppress(OSError):
                drop_traverse(folder, uid)
        for name in users:
            remove(name)
