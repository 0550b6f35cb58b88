"""Confinement steps of a sandboxed run, applied by the run's own trusted processes.

A run is three processes, all forked from the template (``template.py``):

1. the **reaper** (in the host's PID namespace, outside the run's cgroups) calls
   ``unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)`` and builds the mount table
   (:func:`build_mounts`: a plan built as data by ``mountplan.py``, performed by ``mounts.py``):
   ``/`` made private, an empty read-only tmpfs over every hidden path (solutions, tests, .git,
   build, the grader's package, submissions, outputs), a fresh tmpfs over ``/tmp``, ``/dev/shm``,
   ``/var/tmp``, ``/run/lock``, the course checkout bound back if it lived under one of those,
   and the compile cache as a copy-on-write overlay (or read-write only while warming);
2. the **init**, PID 1 of the new namespace: joins the run's cgroups (everything it starts
   inherits them), mounts a ``/proc`` that shows only the run,
   reaps orphans and exits when the worker does, at which point the kernel kills every
   process left in the namespace (nothing survives a run);
3. the **worker**: sets rlimits, drops to the run's unprivileged uid with
   ``no_new_privs`` (:func:`drop_privileges`) and only then sees student code.

Without root (``Confinement.USERNS``), the reaper's ``unshare`` adds a **user
namespace** (``CLONE_NEWUSER``) in which it is root, mapped to the grader's own uid, so it can
build the same mount table. Three things then stand in for the separate uid a root grader gives
each run:

* the whole file system is made read-only first (``mount_setattr(AT_RECURSIVE, RDONLY)``):
  the run's uid outside is the grader's, which may write the checkout, its home, the gradebook;
  only the run's private tmpfs mounts are writable;
* the worker enters a second, nested user namespace as uid 1000, forbids any further user
  namespace in it (``user.max_user_namespaces = 0``, a per-namespace limit), drops every
  capability (bounding set included) and sets ``no_new_privs``; it checks ``/proc/self/status``
  says so before any student code runs. Mounts made by the parent namespace cannot be
  unmounted from there, so the hidden paths stay covered;
* processes are capped by the reaper's task gate (``taskgate.py``: each new process or thread waits
  for its count), with ``RLIMIT_NPROC``, which the kernel counts per user namespace, as a backstop.

Python 3.11 has no ``os.unshare``/``mount``; they are called through ctypes. With
``Confinement.NONE`` (``--unconfined``, only where user namespaces are off) none of
the namespaces apply: each step that could not be applied is returned as a notice, and the
run relies on rlimits and the static checks of the trusted side.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys

from course_grader.sandbox import mountplan
from course_grader.sandbox.mountplan import CACHE_MOUNT, plan_mounts
from course_grader.sandbox.mounts import (
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    ConfineError,
    apply_mounts,
    checked,
    libc,
    make_read_only,
    mount,
    survey,
)
from course_grader.sandbox.notices import Weakening
from course_grader.status import Confinement

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x08000000, 0x20000000, 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG, PR_SET_NAME, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 15, 38, 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SANDBOX_UID = 1000                         # the worker's uid inside its nested user namespace
CAP_LAST_POSSIBLE = 63

WORKDIR = mountplan.WORKDIR                # a run's cwd and HOME (an unconfined run's own folder instead)
MOUNTED = False                            # set once build_mounts made this process's private tree


def prctl(option: int, value: int) -> None:
    libc.prctl(option, value, 0, 0, 0)


def set_name(name: str) -> None:
    """The process name ``top`` and ``ps -e`` show (15 bytes at most)."""
    buf = ctypes.create_string_buffer(name.encode()[:15])
    libc.prctl(PR_SET_NAME, buf, 0, 0, 0)


def die_with_parent() -> None:
    prctl(PR_SET_PDEATHSIG, 9)


def default_signal_handlers() -> None:
    """Every signal with a handler gets its default action back. The kernel drops a signal sent to a
    PID namespace's init from inside that namespace unless init handles it: with no handler, the
    run's code (same uid as init in a user-namespace run) cannot make its init do anything."""
    import signal

    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if signal.getsignal(number) not in (signal.SIG_DFL, signal.SIG_IGN, None):
                signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass


def is_root() -> bool:
    return os.geteuid() == 0


def join_cgroups(paths: list[str]) -> None:
    for path in paths:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0")  # "0": the writing process (its pid may be 1 of a namespace)


USERNS_SETTINGS = ("user namespaces are off for ordinary users on this machine. An administrator turns them on "
                   "with `sysctl -w kernel.unprivileged_userns_clone=1` (Debian and Ubuntu kernels), "
                   "`sysctl -w user.max_user_namespaces=15000` (where it is 0), or, on Ubuntu 23.10 and later, "
                   "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor profile that allows "
                   "`userns` for this Python)")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter_user_namespace(flags: int, inside: int, outside_uid: int, outside_gid: int) -> None:
    """``unshare(CLONE_NEWUSER | flags)`` and map ``inside`` to the caller's uid and gid outside."""
    checked(libc.unshare(CLONE_NEWUSER | flags), "unshare (user namespace)")
    _write("/proc/self/setgroups", "deny")   # required before an unprivileged gid_map
    _write("/proc/self/uid_map", f"{inside} {outside_uid} 1")
    _write("/proc/self/gid_map", f"{inside} {outside_gid} 1")


def user_namespaces_refusal() -> str | None:
    """None when this process can confine runs without root (a child creates a user namespace
    with mount, PID and network namespaces, mounts a tmpfs and makes the tree read-only); else why not."""
    pid = os.fork()
    if pid == 0:
        try:
            enter_user_namespace(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC, 0, os.getuid(), os.getgid())
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            make_read_only("/")
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k")
        except BaseException:  # noqa: BLE001 - any failure means: not available
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return None if os.waitstatus_to_exitcode(status) == 0 else USERNS_SETTINGS


def unshare_namespaces(confinement: Confinement = Confinement.ROOT) -> list[str]:
    """New PID (for the children), mount, network and IPC namespaces; notices for what failed.

    ``confinement``: ``ROOT`` (the grader is root), ``USERNS`` (not root: a user namespace first,
    and any failure raises, since the run must not start half-confined) or ``NONE``.
    The IPC namespace matters because System V shared memory, semaphores and message queues
    outlive the process that made them; in a namespace of its own they end with the run."""
    if confinement is Confinement.USERNS:
        enter_user_namespace(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC, 0, os.getuid(), os.getgid())
        return []
    if confinement is not Confinement.ROOT or not is_root():
        return ["unconfined: no PID, mount or network namespace; instructor files are hidden only "
                "by not being imported, and processes are ended by process group"]
    if libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) == 0:
        return []
    err = os.strerror(ctypes.get_errno())
    notices = []
    for flag, missing in ((CLONE_NEWNS, Weakening.NO_MOUNT_NAMESPACE), (CLONE_NEWPID, Weakening.NO_PID_NAMESPACE),
                          (CLONE_NEWNET, Weakening.NO_NETWORK_NAMESPACE), (CLONE_NEWIPC, Weakening.NO_IPC_NAMESPACE)):
        if libc.unshare(flag) != 0:
            notices.append(missing.notice(err))
    return notices


def build_mounts(hide: list[str], reveal: dict[str, str], keep: list[str], compile_cache: str,
                 cache_writable: bool, uid: int, read_only: bool = False, cover=()) -> list[str]:
    """Build the run's mount table in the current (new) mount namespace; notices for what failed.

    Three steps: ``mounts.survey`` reads what the plan depends on (real paths, which are folders),
    ``mountplan.plan_mounts`` (pure; its docstring says what each argument means) lists the
    operations in order, ``mounts.apply_mounts`` performs them."""
    global MOUNTED
    facts = survey(hide, reveal, keep, cover, uid)
    notices = apply_mounts(plan_mounts(hide, reveal, keep, compile_cache, cache_writable, uid, read_only, cover, facts))
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


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def capabilities() -> dict[str, int]:
    """This process's capability sets, as ``/proc/self/status`` shows them."""
    sets = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")):
                name, value = line.split(":")
                sets[name] = int(value.strip(), 16)
    return sets


def drop_into_nested_user_namespace(max_processes: int) -> None:
    """The worker's last step in a user-namespace run: no root, no capability, no new namespace.

    A nested user namespace maps uid ``SANDBOX_UID`` to the run's root (the grader outside);
    ``user.max_user_namespaces`` is set to 0 in it, so student code cannot create a user namespace
    (the way to a mount namespace of its own); ``RLIMIT_NPROC`` is counted per user namespace
    (Linux 5.14+), so it caps this run's processes and threads, not the grader's."""
    enter_user_namespace(0, SANDBOX_UID, 0, 0)
    _write("/proc/sys/user/max_user_namespaces", "0")
    resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    for cap in range(CAP_LAST_POSSIBLE + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the last capability the kernel knows: EINVAL, harmless
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    checked(libc.capset(ctypes.byref(header), data), "capset")
    left = {name: value for name, value in capabilities().items() if value}
    if left:
        raise ConfineError(f"capabilities left after dropping them: {left}")


def drop_privileges(uid: int, confinement: Confinement = Confinement.ROOT, max_processes: int = 0) -> list[str]:
    """Become ``uid`` for good (no supplementary groups, no way back, no setuid gain).

    In a user-namespace run, :func:`drop_into_nested_user_namespace` instead."""
    notices = []
    if confinement is Confinement.USERNS:
        drop_into_nested_user_namespace(max_processes)
    elif uid and is_root():
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
