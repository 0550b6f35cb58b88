"""The mount table performed: ``survey`` reads the file system for the planner, ``apply_mounts`` runs a plan.

Both run in a run's reaper, in its new mount namespace (``confine.build_mounts`` calls them
around ``mountplan.plan_mounts``). Also the mount system calls themselves (``mount``,
``mount_setattr``) and the ctypes handle the sandbox's other system calls share: Python 3.11 has
no ``os.mount``.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable, Mapping

from course_grader.errors import ConfineError
from course_grader.sandbox.mountplan import (
    PRIVATE_DIRS,
    BindBack,
    BindCache,
    Cover,
    FileFacts,
    HideFile,
    HideFolder,
    MakePrivate,
    MakeWorkdir,
    MountOp,
    MountPlan,
    OverlayCache,
    PrivateTmpfs,
    ReadOnlyTree,
    outermost,
)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 1 << 18
SYS_MOUNT_SETATTR = 442                    # x86_64 and aarch64 share this number (Linux 5.12+)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1

libc = ctypes.CDLL(None, use_errno=True)


def checked(result: int, what: str) -> None:
    """Raise ``ConfineError`` (with errno's text) unless a libc call returned 0."""
    if result != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    checked(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def set_read_only(path: str, read_only: bool = True, recursive: bool = False) -> None:
    """Set or clear the read-only flag of the mount at ``path`` (and every mount below it when
    ``recursive``), in this mount namespace only (``mount_setattr``)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0) if read_only else _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)
    result = libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE if recursive else 0,
                          ctypes.byref(attr), ctypes.sizeof(attr))
    if result != 0:
        state = "read-only" if read_only else "writable"
        raise ConfineError(f"mount_setattr {path} {state}: {os.strerror(ctypes.get_errno())}")


def make_read_only(path: str) -> None:
    """Make ``path`` and every mount below it read-only, in this mount namespace only."""
    set_read_only(path, recursive=True)


def _first_blocked_ancestors(paths: Iterable[str]) -> frozenset[str]:
    """For each path, its first proper ancestor (from the root down) that other users cannot traverse."""
    found = set()
    for path in paths:
        current = "/"
        for part in path.strip("/").split("/")[:-1]:
            current = os.path.join(current, part)
            if not os.stat(current).st_mode & 0o001:
                found.add(current)
                break
    return frozenset(found)


def survey(hide: Iterable[str], reveal: Mapping[str, str], keep: Iterable[str], cover: Iterable[str],
           uid: int) -> FileFacts:
    """What ``plan_mounts`` needs to know of the file system for these inputs (real paths, kinds)."""
    hide, keep, cover = list(hide), list(keep), list(cover)
    real = {p: os.path.realpath(p) for p in (*hide, *reveal, *keep, *cover)}
    candidates = [*(real[p] for p in (*hide, *cover)), *PRIVATE_DIRS]
    return FileFacts(
        real=real,
        present=frozenset(p for p in hide if os.path.lexists(p)),
        folders=frozenset(p for p in candidates if os.path.isdir(p)),
        links=frozenset(p for p in PRIVATE_DIRS if os.path.islink(p)),
        untraversable=_first_blocked_ancestors(outermost(real[p] for p in keep)) if uid else frozenset())


def apply_mounts(plan: MountPlan) -> list[str]:
    """Perform ``plan`` in order in the current (new) mount namespace; notices for what failed.

    A failed operation that names a ``Weakening`` becomes its notice (the grader then refuses the
    run); any other failure raises. Every folder bound back is opened first, before anything covers it."""
    notices: list[str] = []
    fds = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in plan.sources()}
    try:
        for op in plan.ops:
            try:
                notices += _apply(op, fds)
            except (ConfineError, OSError) as exc:
                if op.weakens is None:
                    raise
                notices.append(op.weakens.notice(exc, op.path))
    finally:
        for fd in fds.values():
            os.close(fd)
    return notices


def _apply(op: MountOp, fds: dict[str, int]) -> list[str]:
    """One operation (see each class in ``mountplan``); notices for what it could not do but may skip."""
    match op:
        case MakePrivate(path):
            mount(None, path, None, MS_REC | MS_PRIVATE)
        case ReadOnlyTree(path):
            make_read_only(path)
        case HideFolder(path, reveal):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, op.options)
            for r in reveal:
                os.makedirs(r.target, exist_ok=True)
                mount(f"/proc/self/fd/{fds[r.source]}", r.target, None, MS_BIND | MS_REC)
                mount(None, r.target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
            mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, op.options)
        case HideFile(path):
            mount("/dev/null", path, None, MS_BIND)
        case PrivateTmpfs(path) | Cover(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, op.options)
        case BindBack(path):
            os.makedirs(path, exist_ok=True)
            mount(f"/proc/self/fd/{fds[path]}", path, None, MS_BIND | MS_REC)
        case MakeWorkdir(path, uid):
            os.makedirs(path, mode=0o700)
            os.chown(path, uid, uid)
        case BindCache(source, target, open_up, clear_read_only):
            os.makedirs(target)
            if open_up:
                os.chmod(f"/proc/self/fd/{fds[source]}", 0o777)  # sealed again (0700) when warming ends
            mount(f"/proc/self/fd/{fds[source]}", target, None, MS_BIND)
            if clear_read_only:  # the bind inherits the tree's read-only flag; this one mount must be writable
                set_read_only(target, False)
        case OverlayCache(source, target, upper, work, uid):
            os.makedirs(target)
            os.makedirs(upper, mode=0o700)
            os.makedirs(work, mode=0o700)
            os.chown(upper, uid, uid)
            try:
                mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV,
                      f"lowerdir=/proc/self/fd/{fds[source]},upperdir={upper},workdir={work}")
            except ConfineError as exc:
                return [f"compile cache not shared ({exc}): this run compiles cold"]
            finally:
                os.chmod(upper, 0o700)
    return []
