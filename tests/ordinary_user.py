"""An ordinary (non-root) user for the tests that must see what a real student or instructor sees.

Tests run as root here (CI, containers), but most people who run the course are not root.
:func:`ordinary_user` creates one system user for this test process (``course-st-PID``,
``useradd``) and makes this venv's Python reachable by it. That Python may live under a folder
closed to others (here ``/root/.pyenv``, inside the ``0700`` ``/root``): instead of opening that
folder to everyone, each closed folder on the way gets one POSIX ACL entry that lets this user,
and only this user, pass through it (``x``, no listing, no reading). The ACL is written as the
kernel's ``system.posix_acl_access`` extended attribute, so no ``acl`` package is needed.

**Nothing is left behind.** When the test process ends, its user (with its home) and every ACL
entry made for it are removed (``atexit``); a folder whose ACL then holds nothing else gets its
plain mode back. A process that was killed cannot do that: the next process that creates a user
first removes the users (and their ACL entries) of test processes that are no longer running.
Each test run has its own user, so one run's clean-up never pulls the user from under another's
(two checkouts on one machine); ACL edits take a lock file in /tmp in turn. The pytest-xdist workers
of one run share their run's user (``course-st-PID`` of the pytest process that started them, which
the root ``conftest.py`` names in :data:`SESSION_ENV` and which removes the user when the run ends):
one user, like one instructor, whose warm-up store (:func:`user_env`) is filled once for the run.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import os
import pwd
import shutil
import stat
import struct
import subprocess
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

USER_PREFIX = "course-st-"   # + the pid of the test run (process) that made it
SESSION_ENV = "COURSE_TEST_USER_RUN"   # that pid, set by the root conftest.py for its xdist workers
STORE_ENV = "COURSE_GRADER_STORE"      # course_grader.pipeline.cache_store's: where a grader keeps its warm-up
LOCK_FILE = Path("/tmp/course-ordinary-user.lock")
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


@contextmanager
def acl_lock():
    """The one lock over the tests' user and ACL changes (an ACL is read, changed and written back)."""
    fd = os.open(LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove_traverse(path: Path, uid: int) -> None:
    """Take ``uid``'s ACL entry off ``path``; with no named entry left, the ACL goes and the plain mode
    is what it was (its group bits from the ACL's owning-group entry, not the mask)."""
    try:
        entries = _acl_entries(path)
    except FileNotFoundError:
        return
    if not any(tag == USER and who == uid for tag, _, who in entries):
        return
    kept = [e for e in entries if not (e[0] == USER and e[2] == uid) and e[0] != MASK]
    if not [e for e in kept if e[0] in (USER, GROUP)]:
        group_obj = next((perm for tag, perm, _ in kept if tag == GROUP_OBJ), 0)
        mode = stat.S_IMODE(path.stat().st_mode)
        os.removexattr(path, ACL_XATTR)
        os.chmod(path, (mode & ~0o070) | (group_obj << 3))
        return
    group_class = 0
    for tag, perm, _ in kept:
        if tag in (USER, GROUP, GROUP_OBJ):
            group_class |= perm
    kept.append((MASK, group_class, UNDEFINED_ID))
    kept.sort(key=lambda e: (e[0], e[2]))
    os.setxattr(path, ACL_XATTR, struct.pack("<I", ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in kept))


def _traversed_folders() -> list[Path]:
    """Every folder above this venv's Python (where :func:`ordinary_user` may have added an entry)."""
    return list(reversed(Path(os.path.realpath(sys.executable)).parents))


def remove_user(entry: pwd.struct_passwd, locked: bool = False) -> None:
    """Remove the test user ``entry``, its home and its ACL entries on the way to this Python
    (``locked``: the caller holds :func:`acl_lock`)."""
    with nullcontext() if locked else acl_lock():
        for folder in _traversed_folders():
            remove_traverse(folder, entry.pw_uid)
        subprocess.run(["userdel", "--force", "--remove", entry.pw_name], capture_output=True)


def _remove_stale_users(locked: bool = False) -> None:
    """Users of test runs that ended without cleaning up (killed): removed with their ACL entries."""
    for entry in pwd.getpwall():
        if not entry.pw_name.startswith(USER_PREFIX):
            continue
        pid = entry.pw_name[len(USER_PREFIX):]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            remove_user(entry, locked=locked)


_MINE: dict[str, pwd.struct_passwd] = {}


def _owner() -> int:
    """The pid the user is named for: the test run's (:data:`SESSION_ENV`, while that process lives), else ours."""
    run = os.environ.get(SESSION_ENV, "")
    if run.isdigit() and int(run) != os.getpid() and Path(f"/proc/{run}").exists():
        return int(run)
    return os.getpid()


def ordinary_user() -> pwd.struct_passwd:
    """This test run's user, created on first use, able to run this venv's Python; removed, with its
    ACL entries, when the run ends (this process's exit, or the run's ``pytest_unconfigure``). Root only."""
    if os.geteuid() != 0:
        raise PermissionError("only root can create the test's ordinary user")
    owner = _owner()
    name = f"{USER_PREFIX}{owner}"
    if name in _MINE:
        return _MINE[name]
    with acl_lock():   # two xdist workers of one run may ask at once: one creates, the other finds it
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            entry = None
        if entry is None:
            _remove_stale_users(locked=True)
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
            entry = pwd.getpwnam(name)
            interpreter = Path(os.path.realpath(sys.executable))
            for folder in _closed_folders(interpreter, entry.pw_uid, entry.pw_gid):
                allow_traverse(folder, entry.pw_uid)
    _MINE[name] = entry
    if owner == os.getpid():
        atexit.register(remove_user, entry)
    probe = subprocess.run(["runuser", "-u", name, "--", sys.executable, "-c", "import compile_course"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise RuntimeError(f"{name} still cannot run {sys.executable}: {probe.stderr.strip()[-500:]}")
    return entry


def remove_run_user() -> None:
    """The end of a test run: its user (named for this process) goes, if one of its workers made it."""
    try:
        entry = pwd.getpwnam(f"{USER_PREFIX}{os.getpid()}")
    except KeyError:
        return
    remove_user(entry)


def user_env(user: pwd.struct_passwd, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a command run as ``user`` (``env -i``) with ``home`` as its HOME: a fresh folder
    per test, while the grader's warm-up store is the user's own default one (``~/course-grading/``
    of the real home), kept for the whole run as an instructor's is kept from one class to the next.
    The first grading run of the test run warms up as this user; later ones reuse its entry (or add
    the exercises it lacks), as ``course grade`` does."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            STORE_ENV: str(Path(user.pw_dir) / "course-grading" / ".compile-cache"), **extra}


def can_make_users() -> str:
    """Empty when :func:`ordinary_user` can work here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create an ordinary user"
    missing = [tool for tool in ("useradd", "runuser") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)}" if missing else ""


def cannot_grade_as_user() -> str:
    """Empty when an ordinary user can be made here and can grade confined in user namespaces, else why not."""
    if reason := can_make_users():
        return reason
    from course_grader.sandbox.confine import user_namespaces_refusal

    return user_namespaces_refusal() or ""
