"""An ordinary (non-root) user for the tests that must see what a real student or instructor sees.

Tests run as root here (CI, containers), but most people who run the course are not root.
:func:`ordinary_user` creates one system user (``useradd``, once; it stays for later runs)
and makes this venv's Python reachable by it. That Python may live under a folder closed
to others (here ``/root/.pyenv``, inside the ``0700`` ``/root``): instead of opening that
folder to everyone, each closed folder on the way gets one POSIX ACL entry that lets this
user, and only this user, pass through it (``x``, no listing, no reading). The ACL is
written as the kernel's ``system.posix_acl_access`` extended attribute, so no ``acl``
package is needed. Nothing is removed afterwards: another test run may be using it.
"""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

USER_NAME = "course-student"
ACL_XATTR = "system.posix_acl_access"
ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED_ID = 0xFFFFFFFF
EXECUTE = 1


def _acl_entries(path: Path) -> list[tuple[int, int, int]]:
    try:
        blob = os.getxattr(path, ACL_XATTR)
    except OSError as exc:
        if exc.errno != errno.ENODATA:
            raise
        mode = path.stat().st_mode
        return [(USER_OBJ, (mode >> 6) & 7, UNDEFINED_ID), (GROUP_OBJ, (mode >> 3) & 7, UNDEFINED_ID),
                (OTHER, mode & 7, UNDEFINED_ID)]
    count = (len(blob) - 4) // 8
    return [struct.unpack_from("<HHI", blob, 4 + 8 * i) for i in range(count)]


def allow_traverse(path: Path, uid: int) -> None:
    """Give ``uid`` search (``x``) permission on the folder ``path`` with one ACL entry."""
    entries = [e for e in _acl_entries(path) if not (e[0] == USER and e[2] == uid) and e[0] != MASK]
    entries.append((USER, EXECUTE, uid))
    group_class = 0
    for tag, perm, _ in entries:
        if tag in (USER, GROUP, GROUP_OBJ):
            group_class |= perm
    entries.append((MASK, group_class, UNDEFINED_ID))
    entries.sort(key=lambda e: (e[0], e[2]))
    blob = struct.pack("<I", ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, ACL_XATTR, blob)


def _closed_folders(target: Path, uid: int, gid: int) -> list[Path]:
    """Folders above ``target`` that ``uid`` cannot pass through."""
    closed = []
    for folder in reversed(Path(target).parents):
        st = folder.stat()
        if st.st_uid == uid:
            continue
        if st.st_gid == gid and st.st_mode & stat.S_IXGRP:
            continue
        if not st.st_mode & stat.S_IXOTH:
            closed.append(folder)
    return closed


def ordinary_user(name: str = USER_NAME) -> pwd.struct_passwd:
    """The test user, created if needed, able to run this venv's Python. Root only."""
    if os.geteuid() != 0:
        raise PermissionError("only root can create the test's ordinary user")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        entry = pwd.getpwnam(name)
    interpreter = Path(os.path.realpath(sys.executable))
    for folder in _closed_folders(interpreter, entry.pw_uid, entry.pw_gid):
        allow_traverse(folder, entry.pw_uid)
    probe = subprocess.run(["runuser", "-u", name, "--", sys.executable, "-c", "import compile_course"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise RuntimeError(f"{name} still cannot run {sys.executable}: {probe.stderr.strip()[-500:]}")
    return entry


def can_make_users() -> str:
    """Empty when :func:`ordinary_user` can work here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create an ordinary user"
    missing = [tool for tool in ("useradd", "runuser") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)}" if missing else ""
