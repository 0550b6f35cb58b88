"""The seccomp filter a run's worker loads last, just before student code runs.

Student code keeps every system call an ordinary program needs (files, sockets, threads, ``fork``,
``exec`` of a compiler); what it loses is the kernel surface that only a sandbox escape needs:
new namespaces (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag), mounts of any kind,
tracing or reading other processes (``ptrace``, ``process_vm_readv``, ``pidfd_getfd``, ``kcmp``),
kernel keyrings, eBPF, ``perf_event_open``, ``userfaultfd``, ``io_uring``, module and kexec
loading, and the host-wide knobs (clock, swap, reboot, accounting). Each of these fails with
``EPERM``, as if the caller lacked the privilege, so well-behaved code sees an ordinary error.

``clone3`` fails with ``ENOSYS`` instead: its flags sit in a struct that a filter cannot read, and
glibc (``pthread_create``, ``posix_spawn``) falls back to ``clone`` on ``ENOSYS``, whose flags it
can. ``prlimit64`` is refused for any process but the caller's own (``pid`` 0, what
``setrlimit`` passes), so the run cannot change the limits of its init.

The filter is built with libseccomp through ``pyseccomp`` (pinned in requirements.txt), never
hand-assembled BPF. A call from another ABI (32-bit ``int 0x80`` on x86_64, x32) kills the process:
libseccomp adds the architecture check. Loading it needs ``no_new_privs``, which the worker has
already set (``confine.drop_privileges``); a filter cannot be removed, and every process the
student's code starts inherits it.
"""

from __future__ import annotations

import errno

from course_grader.errors import FilterError

REFUSED = (
    # namespaces and mounts: the way around the run's mount table
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "open_by_handle_at", "name_to_handle_at",
    # other processes' memory and descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    # large kernel surfaces no course code needs
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "fanotify_init", "lookup_dcookie", "quotactl", "nfsservctl",
    # the machine's own state
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "syslog", "iopl", "ioperm", "vhangup", "sethostname", "setdomainname",
)
NO_SUCH_CALL = ("clone3",)     # ENOSYS: libc falls back to clone, whose flags the filter can read
CLONE_NEW_FLAGS = {            # clone's first argument on x86_64 and aarch64
    "CLONE_NEWTIME": 0x00000080, "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000, "CLONE_NEWNET": 0x40000000,
}


def build():
    """The filter, not yet loaded (a ``pyseccomp.SyscallFilter``)."""
    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError) as exc:   # RuntimeError: libseccomp.so is not installed
        raise FilterError(f"libseccomp is not available: {exc}") from None
    refuse, missing = seccomp.ERRNO(errno.EPERM), seccomp.ERRNO(errno.ENOSYS)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    for name in REFUSED:
        _add(seccomp, rules, refuse, name)
    for name in NO_SUCH_CALL:
        _add(seccomp, rules, missing, name)
    for flag in CLONE_NEW_FLAGS.values():
        _add(seccomp, rules, refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    _add(seccomp, rules, refuse, "prlimit64", seccomp.Arg(0, seccomp.NE, 0))
    return rules


def _add(seccomp, rules, action: int, name: str, *args) -> None:
    number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
    if number < 0:         # a call this architecture does not have (iopl on aarch64): nothing to refuse
        return
    try:
        rules.add_rule(action, number, *args)
    except OSError as exc:
        raise FilterError(f"seccomp rule for {name}: {exc}") from None


def load() -> None:
    """Build the filter and load it into this process (and so every process it starts)."""
    rules = build()
    try:
        rules.load()
    except OSError as exc:
        raise FilterError(f"seccomp filter not loaded: {exc}") from None


def active() -> bool:
    """Whether this process runs under a seccomp filter (``Seccomp: 2`` in ``/proc/self/status``)."""
    with open("/proc/self/status") as f:
        return any(line.split() == ["Seccomp:", "2"] for line in f)
