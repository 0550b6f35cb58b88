"""The run's task cap without a pids cgroup: each new process or thread waits for the reaper's count.

Where a run has no pids cgroup (an ordinary user; root without the pids controller), its worker
loads a second seccomp filter whose only rule is a user notification (``SECCOMP_RET_USER_NOTIF``) on
``clone``, ``fork`` and ``vfork`` (``clone3`` already fails with ``ENOSYS``: ``syscall_filter.py``), and
hands the filter's listener to the run's reaper over a socket (``SCM_RIGHTS``), keeping no copy.
Every process and thread the run's code then starts stops in the kernel until the reaper answers: it
counts the run's tasks (every thread of every process in the run's PID namespace, init included, as
``pids.max`` counts them) and either lets the call go on (``SECCOMP_USER_NOTIF_FLAG_CONTINUE``) or,
at the limit, refuses it with ``EAGAIN`` as the pids cgroup would, and counts the refusal, which it
reports to the grader on its status pipe before the caller is answered (so the grader, holding the
cell's reply, already has the refusal). So a fork bomb is recorded however fast it rises and falls.
The count is never short of what the run holds (``Gate``: a call let go on counts until it is over).

The reaper is out of the run's reach: in the host's PID namespace, which the run cannot see or
signal; the listener is only its own (a second listener cannot be installed: ``EBUSY``); the filter
cannot be removed; a call the other filter refuses (``clone`` with a ``CLONE_NEW*`` flag) is refused
before any notification. If the reaper is gone, the kernel fails every notified call with ``ENOSYS``,
and init, which dies with its reaper, ends the run anyway; if the gate fails, the reaper kills init.
Either way the reaper reports no exit, which the grader takes for its own fault.

Written by hand because no library supervises a run this way. libseccomp (through ``pyseccomp``)
builds and loads the filter; ``pyseccomp``'s own notification calls only reach the listener of a
filter loaded in the same process, so the four libseccomp calls that take the listener's descriptor
are bound here with ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import select
import socket
import time
from collections.abc import Callable

from course_grader.errors import GateError

GATED = ("clone", "fork", "vfork")     # clone3: ENOSYS in syscall_filter (glibc falls back to clone)
CONTINUE = 1                           # SECCOMP_USER_NOTIF_FLAG_CONTINUE
REPORT_EVERY_S = 0.05                  # refusals are reported at most this often (a bomb refuses thousands)


class _Data(ctypes.Structure):
    _fields_ = [("nr", ctypes.c_int), ("arch", ctypes.c_uint32), ("instruction_pointer", ctypes.c_uint64),
                ("args", ctypes.c_uint64 * 6)]


class _Notif(ctypes.Structure):           # struct seccomp_notif
    _fields_ = [("id", ctypes.c_uint64), ("pid", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("data", _Data)]


class _Resp(ctypes.Structure):            # struct seccomp_notif_resp
    _fields_ = [("id", ctypes.c_uint64), ("val", ctypes.c_int64), ("error", ctypes.c_int32),
                ("flags", ctypes.c_uint32)]


# Found once, when the template imports this module: find_library runs ldconfig in a subprocess,
# which the worker, once gated, could not start before the reaper holds the listener.
LIBSECCOMP = ctypes.util.find_library("seccomp")


@functools.cache
def _libseccomp():
    if LIBSECCOMP is None:
        raise GateError("libseccomp is not installed")
    lib = ctypes.CDLL(LIBSECCOMP, use_errno=True)
    lib.seccomp_notify_fd.argtypes = (ctypes.c_void_p,)
    lib.seccomp_notify_alloc.argtypes = (ctypes.POINTER(ctypes.POINTER(_Notif)), ctypes.POINTER(ctypes.POINTER(_Resp)))
    lib.seccomp_notify_receive.argtypes = (ctypes.c_int, ctypes.POINTER(_Notif))
    lib.seccomp_notify_respond.argtypes = (ctypes.c_int, ctypes.POINTER(_Resp))
    return lib


# --- in the worker ---------------------------------------------------------------------------

def load_and_hand_over(sock_fd: int) -> None:
    """Load the gate's filter into this process (and so every process and thread it starts) and send
    its listener over the socket ``sock_fd``; both descriptors are closed here. The worker must be
    single-threaded: a filter loaded without ``TSYNC`` covers the calling thread only."""
    try:
        import pyseccomp as seccomp

        if len(os.listdir("/proc/self/task")) != 1:
            raise GateError("the worker has more than one thread")
        lib = _libseccomp()
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
        for name in GATED:
            number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
            if number >= 0:         # aarch64 has no fork or vfork: clone only
                rules.add_rule(seccomp.NOTIFY, number)
        rules.load()
        listener = lib.seccomp_notify_fd(rules._filter)   # pyseccomp has no accessor for it
        if listener < 0:
            raise GateError(f"no listener ({os.strerror(-listener)})")
        with socket.socket(fileno=sock_fd) as sock:
            socket.send_fds(sock, [b"L"], [listener])
        os.close(listener)
    except (OSError, RuntimeError, ImportError) as exc:
        raise GateError(f"task gate not loaded: {exc}") from None


# --- in the reaper ---------------------------------------------------------------------------

def count_tasks(proc: str = "/proc") -> int:
    """Threads of every process in the PID namespace that ``proc`` shows (zombies included, as the
    pids cgroup counts them until they are reaped)."""
    total = 0
    for name in os.listdir(proc):
        if name.isdigit():
            try:
                total += len(os.listdir(f"{proc}/{name}/task"))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return total


def _gated_numbers() -> frozenset[int]:
    import pyseccomp as seccomp

    return frozenset(n for n in (seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) for name in GATED) if n >= 0)


class Gate:
    """The reaper's side: answers each notified call on ``listener``, at most ``limit`` tasks.

    The run's tasks are counted in its own ``/proc`` (``run_proc``). A call let go on has not always made
    its task by the time the next call is counted (the reaper answers a queue of waiting calls faster
    than the kernel runs them: a bomb limited to 24 held 36 to 44), so each caller let go on also counts,
    as one task more (``pending``), until its call is known to be over: it is gone, it is blocked in
    another system call (``/proc/TID/syscall`` of the host's ``/proc``, ``host_proc``: notifications name
    host thread ids), or it asks again. The count is never less than the run holds; at most it counts
    one task more per caller still busy after its call, for a while."""

    def __init__(self, listener: int, limit: int, host_proc: int, run_proc: str = "/proc",
                 report: Callable[[int], bool] = lambda total: False):
        self.listener, self.limit, self.host_proc, self.run_proc = listener, limit, host_proc, run_proc
        self.report = report
        self.refused = self.reported = 0
        self.pending: set[int] = set()
        self.gated = _gated_numbers()
        self.lib = _libseccomp()
        self.req, self.resp = ctypes.POINTER(_Notif)(), ctypes.POINTER(_Resp)()
        if self.lib.seccomp_notify_alloc(ctypes.byref(self.req), ctypes.byref(self.resp)) != 0:
            raise GateError("seccomp_notify_alloc failed")

    def _call_over(self, tid: int) -> bool:
        """Whether the call the gate let ``tid`` make has returned, so that its task (if any) shows."""
        try:
            fd = os.open(f"{tid}/syscall", os.O_RDONLY, dir_fd=self.host_proc)
            try:
                first = os.read(fd, 32).split(maxsplit=1)[0]
            finally:
                os.close(fd)
        except (FileNotFoundError, ProcessLookupError):
            return True                   # gone (and reaped): whatever it made shows, or has ended
        except (OSError, IndexError):
            return False                  # closed to the reaper (made not dumpable): counted till it asks again
        # "running": on a CPU, maybe still inside the call; a number: blocked in that call; -1: not in one
        return first != b"running" and int(first) not in self.gated

    def tasks(self) -> int:
        """The run's tasks, plus one per caller whose call may not have made its task yet."""
        self.pending = {tid for tid in self.pending if not self._call_over(tid)}
        return count_tasks(self.run_proc) + len(self.pending)    # in this order: see _call_over

    def answer(self) -> None:
        """Receive one notification and answer it. A caller that died meanwhile is no error."""
        ctypes.memset(self.req, 0, ctypes.sizeof(_Notif))    # the kernel wants a zeroed buffer
        if self.lib.seccomp_notify_receive(self.listener, self.req) != 0:
            if ctypes.get_errno() in (errno.ENOENT, errno.EINTR):
                return
            raise GateError(f"seccomp_notify_receive: {os.strerror(ctypes.get_errno())}")
        caller = self.req.contents.pid
        self.pending.discard(caller)      # it asks again: its last call is over
        resp = self.resp.contents
        resp.id, resp.val = self.req.contents.id, 0
        if self.tasks() >= self.limit:
            resp.error, resp.flags = -errno.EAGAIN, 0
            self.refused += 1
            # Told before the caller learns of it: the grader, once it has the cell's reply, finds the
            # refusal already on the status pipe (reported after it, it could be read too late).
            if self.report(self.refused):
                self.reported = self.refused
        else:
            resp.error, resp.flags = 0, CONTINUE
            self.pending.add(caller)
        if self.lib.seccomp_notify_respond(self.listener, self.resp) != 0 and ctypes.get_errno() != errno.ENOENT:
            raise GateError(f"seccomp_notify_respond: {os.strerror(ctypes.get_errno())}")


def supervise(init_pid: int, sock_fd: int, limit: int, host_proc: int, report: Callable[[int], bool]) -> int:
    """The reaper's loop in a gated run: answer the run's notified calls until ``init_pid`` exits; return
    its wait status. ``host_proc``: a descriptor of the host's ``/proc``, opened before init mounted the
    run's over it (closed here). ``report(total)`` tells the grader how many calls have been refused so
    far; it returns False when it could not (a full pipe), and is tried again. Should the gate fail, init
    is killed and ``GateError`` raised: the run never goes on without its cap."""
    pidfd = os.pidfd_open(init_pid)
    sock = socket.socket(fileno=sock_fd)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(sock, select.POLLIN)
    gate: Gate | None = None
    refused = reported = 0
    last_report = 0.0
    while True:
        for fd, events in poller.poll(REPORT_EVERY_S * 1000 if refused > reported else None):
            if fd == pidfd:
                if refused > reported:
                    report(refused)
                _, status = os.waitpid(init_pid, 0)
                os.close(pidfd)
                os.close(host_proc)
                sock.close()
                if gate is not None:
                    os.close(gate.listener)
                return status
            try:
                if fd == sock.fileno():
                    poller.unregister(sock)
                    gate = _open_gate(sock, limit, host_proc, report)
                    if gate is not None:
                        poller.register(gate.listener, select.POLLIN)
                elif events & select.POLLIN:
                    gate.answer()
                    refused = gate.refused
                    if gate.reported > reported:
                        reported, last_report = gate.reported, time.monotonic()
                else:                     # POLLHUP: every process under the filter has ended
                    poller.unregister(fd)
            except GateError:
                os.kill(init_pid, 9)      # ends the run; the reaper then leaves without reporting its exit
                raise
        if refused > reported and time.monotonic() - last_report >= REPORT_EVERY_S and report(refused):  # a full pipe
            reported, last_report = refused, time.monotonic()


def _open_gate(sock: socket.socket, limit: int, host_proc: int, report: Callable[[int], bool]) -> Gate | None:
    """The gate on the listener the worker sends; None if it closed the socket without one (it failed
    to start, and exits)."""
    try:
        _, fds, _, _ = socket.recv_fds(sock, 16, 1)
    except OSError:
        fds = []
    finally:
        sock.close()
    if not fds:
        return None
    try:
        return Gate(fds[0], limit, host_proc, report=report)
    except GateError:
        os.close(fds[0])
        raise
