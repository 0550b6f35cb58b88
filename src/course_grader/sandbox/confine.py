"""Confinement steps of a sandboxed run, applied by the run's own trusted processes.

A run is three processes, all forked from the template (``template.py``):

1. the **reaper** (in the host's PID namespace, outside the run's cgroups) calls
   ``unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)`` and builds the mount table
   (:func:`build_mounts`): ``/`` made private, an empty read-only tmpfs over every hidden
   path (solutions, tests, .git, build, the grader's package, submissions, outputs),
   a fresh tmpfs over ``/tmp``, ``/dev/shm``, ``/var/tmp``, ``/run/lock``, the course
   checkout bound back if it lived under one of those, and the compile cache as a
   copy-on-write overlay (or read-write only while warming);
2. the **init**, PID 1 of the new namespace: joins the run's cgroups (everything it starts
   inherits them), mounts a ``/proc`` that shows only the run,
   reaps orphans and exits when the worker does, at which point the kernel kills every
   process left in the namespace (nothing survives a run);
3. the **worker**: sets rlimits, drops to the run's unprivileged uid with
   ``no_new_privs`` (:func:`drop_privileges`) and only then sees student code.

Python 3.11 has no ``os.unshare``/``mount``; they are called through ctypes. Without
root, none of the namespaces apply: each step that could not be applied is returned as
a notice, and the run relies on rlimits and the static checks of the trusted side.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NAME, PR_SET_NO_NEW_PRIVS = 1, 15, 38

PRIVATE_DIRS = ("/tmp", "/dev/shm", "/var/tmp", "/run/lock")   # each gets its own empty tmpfs
PRIVATE_TMP_SIZE = "size=1g"
CACHE_MOUNT = "/tmp/.compile-cache"        # where a run sees the compile cache
WORKDIR = "/tmp/work"                      # a run's cwd and HOME
MOUNTED = False                            # set once build_mounts made this process's private tree


class ConfineError(Exception):
    """A confinement step failed where it must not (the run does not start)."""


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


def set_name(name: str) -> None:
    """The process name ``top`` and ``ps -e`` show (15 bytes at most)."""
    buf = ctypes.create_string_buffer(name.encode()[:15])
    _libc.prctl(PR_SET_NAME, buf, 0, 0, 0)


def die_with_parent() -> None:
    prctl(PR_SET_PDEATHSIG, 9)


def is_root() -> bool:
    return os.geteuid() == 0


def join_cgroups(paths: list[str]) -> None:
    for path in paths:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0")  # "0": the writing process (its pid may be 1 of a namespace)


def unshare_namespaces() -> list[str]:
    """New PID (for the children), mount, network and IPC namespaces; notices for what failed.

    The IPC namespace matters because System V shared memory, semaphores and message queues
    outlive the process that made them; in a namespace of its own they end with the run."""
    if not is_root():
        return ["not root: no PID, mount or network namespace; instructor files are hidden only "
                "by not being imported, and processes are ended by process group"]
    if _libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) == 0:
        return []
    err = os.strerror(ctypes.get_errno())
    notices = []
    for flag, name in ((CLONE_NEWNS, "mount"), (CLONE_NEWPID, "PID"), (CLONE_NEWNET, "network"), (CLONE_NEWIPC, "IPC")):
        if _libc.unshare(flag) != 0:
            notices.append(f"no {name} namespace ({err})")
    return notices


def _outermost(paths) -> list[str]:
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any(p == q or p.startswith(q.rstrip("/") + "/") for q in out):
            out.append(p)
    return out


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _first_blocked_ancestor(path: str) -> str | None:
    """The first proper ancestor of ``path`` that other users cannot traverse."""
    current = "/"
    for part in path.strip("/").split("/")[:-1]:
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & 0o001:
            return current
    return None


def build_mounts(hide: list[str], reveal: dict[str, str], keep: list[str], compile_cache: str,
                 cache_writable: bool, uid: int) -> list[str]:
    """Build the run's mount table in the current (new) mount namespace; notices for what failed.

    ``keep``: folders that must stay reachable even if a private dir covers them (the course
    checkout and the Python installation). ``reveal``: target -> source, folders inside hidden
    ones that this run still sees, read-only (the measuring child's ``course_grader/harness``).
    """
    global MOUNTED
    notices: list[str] = []
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Open everything that must be bound back before anything covers it.
    reveal_fds = {os.path.realpath(target): os.open(source, os.O_PATH | os.O_DIRECTORY)
                  for target, source in reveal.items()}
    reveal = list(reveal_fds)
    keep = _outermost(map(os.path.realpath, keep))
    # Folders the run's uid could not traverse anyway (e.g. /root holding pyenv's Python) are
    # covered by an empty tmpfs too, and what the run needs under them is bound back.
    blocked = [a for a in map(_first_blocked_ancestor, keep) if a] if uid else []
    keep_fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in keep
                if any(_under(p, d) for d in (*PRIVATE_DIRS, *blocked))}
    cache_fd = os.open(compile_cache, os.O_PATH | os.O_DIRECTORY) if compile_cache else -1

    for path in _outermost(os.path.realpath(p) for p in hide if os.path.lexists(p)):
        try:
            if os.path.isdir(path):
                inside = [r for r in reveal if _under(r, path) and r != path]
                mode = "555"
                mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size=64k,mode={mode}")
                for r in inside:
                    os.makedirs(r, exist_ok=True)
                    mount(f"/proc/self/fd/{reveal_fds[r]}", r, None, MS_BIND | MS_REC)
                    mount(None, r, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
                mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, f"size=64k,mode={mode}")
            else:
                mount("/dev/null", path, None, MS_BIND)
        except (ConfineError, OSError) as exc:
            notices.append(f"could not hide {path}: {exc}")

    for folder in PRIVATE_DIRS:
        if os.path.isdir(folder) and not os.path.islink(folder):
            try:
                mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"{PRIVATE_TMP_SIZE},mode=1777")
            except ConfineError as exc:
                notices.append(f"could not make {folder} private: {exc}")
    for folder in _outermost(blocked):
        try:
            mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755")
        except ConfineError as exc:
            notices.append(f"could not cover {folder}: {exc}")
    for path, fd in keep_fds.items():
        os.makedirs(path, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)

    os.makedirs(WORKDIR, mode=0o700)
    os.chown(WORKDIR, uid, uid)
    if cache_fd >= 0:
        os.makedirs(CACHE_MOUNT)
        if cache_writable:
            os.chmod(f"/proc/self/fd/{cache_fd}", 0o777)  # sealed again (0700) when warming ends
            mount(f"/proc/self/fd/{cache_fd}", CACHE_MOUNT, None, MS_BIND)
        else:
            upper, work = "/tmp/.compile-cache-upper", "/tmp/.compile-cache-work"
            os.makedirs(upper, mode=0o700)
            os.makedirs(work, mode=0o700)
            os.chown(upper, uid, uid)
            try:
                mount("overlay", CACHE_MOUNT, "overlay", MS_NOSUID | MS_NODEV,
                      f"lowerdir=/proc/self/fd/{cache_fd},upperdir={upper},workdir={work}")
            except ConfineError as exc:
                notices.append(f"compile cache not shared ({exc}): this run compiles cold")
            os.chmod(upper, 0o700)
        os.close(cache_fd)
    for fd in (*reveal_fds.values(), *keep_fds.values()):
        os.close(fd)
    MOUNTED = True
    return notices


def mount_proc() -> None:
    """A /proc that shows only this PID namespace (called by the namespace's PID 1)."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def set_rlimits(cpu_s_total: int, file_bytes: int, open_files: int, address_space: int | None) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s_total, cpu_s_total + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def drop_privileges(uid: int) -> list[str]:
    """Become ``uid`` for good (no supplementary groups, no way back, no setuid gain)."""
    notices = []
    if uid and is_root():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.geteuid() != uid or os.getuid() != uid:
            raise ConfineError("uid did not change")
    elif uid:
        notices.append("not root: the run keeps the grader's uid")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    die_with_parent()  # a change of credentials clears the death signal: set it again
    return notices


def close_fds_except(keep: set[int]) -> None:
    for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
        if fd not in keep and fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass


def course_paths() -> list[str]:
    """What a run must still reach: the course checkout (``src/``, usually the venv) and Python."""
    from compile_course.paths import ROOT

    return [str(ROOT), sys.prefix, sys.base_prefix]


def child_environment(cache: bool) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": WORKDIR, "TMPDIR": "/tmp",
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
           "TORCHINDUCTOR_COMPILE_THREADS": "1", "XDG_CACHE_HOME": f"{WORKDIR}/.cache",
           "MPLCONFIGDIR": f"{WORKDIR}/.matplotlib"}
    env["TORCHINDUCTOR_CACHE_DIR"] = CACHE_MOUNT if cache else f"{WORKDIR}/.inductor-cache"
    return env
