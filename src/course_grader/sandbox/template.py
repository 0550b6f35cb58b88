"""The fork server: imports torch once, then forks one confined run per request.

Started by ``GradingHost`` as ``python -I -m course_grader.sandbox.template CONTROL_FD``.
Before announcing itself it imports what a student's kernel imports (``course_grader.forkserver``:
torch, torch._dynamo, inductor's compile path, the ``compile_course`` helpers) and what only a run
uses (IPython's InteractiveShell, the seccomp binding), and nothing from solutions, hidden tests or
``course_grader.harness``; it never runs student code itself. It reports its thread count, which
must be 1 (forking a process that has other threads can copy a held lock), so the BLAS/OpenMP
pools are pinned to one thread before torch is imported.

The preload and the fork are ``forkserver``'s, shared with the course's warm Jupyter kernels;
what is the sandbox's alone stays here: requests that carry descriptors, and the three
confining processes of a run.

Each ``Spawn`` request arrives on the control socket with three descriptors (the run's
request/reply socket, its raw output pipe, the reaper's status pipe). The template forks
the run's reaper (see ``confine.py`` for the three processes of a run) and goes back to
waiting. In a run without a pids cgroup the reaper also answers the run's task gate
(``taskgate.py``) while it waits. It exits when the control socket closes, that is when the grader ends (or is killed):
it first kills what is left in its runs' cgroups and removes them, and its death kills every
reaper (``PR_SET_PDEATHSIG``), whose death kills its namespace.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

# Ctrl-C in a terminal reaches this process and its forks too (they share the command's process group):
# end at once and quietly, so the command's one line saying how to resume is all that is printed.
signal.signal(signal.SIGINT, lambda signum, frame: os._exit(128 + signum))

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
# Inductor precompiles its C++ prefix header (a 158 MB .gch, ~7 s of g++) into
# /tmp/torchinductor_<user>/precompiled_headers whatever TORCHINDUCTOR_CACHE_DIR says, before it
# loads any CPU kernel, even one found in the compile cache. A run's /tmp is private, so every run
# that loaded a kernel built that header again, for one or two kernels. Runs build without it.
os.environ["TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS"] = "0"

from course_grader import forkserver  # noqa: E402  (this and the modules below: loaded before any mount hides them)
from course_grader.errors import ProtocolError  # noqa: E402
from course_grader.sandbox import cgroups, confine, kernel, measure, syscall_filter, taskgate  # noqa: E402
from course_grader.wire import protocol  # noqa: E402
from course_grader.wire.protocol import Exited, Spawn, Started, TasksRefused, TemplateReady  # noqa: E402

SPAWN_BYTES = 1 << 20            # one spawn request (a hide list of paths) fits easily
# Beyond what every kernel imports (forkserver.PRELOAD): a run's notebook kernel is an InteractiveShell,
# its worker loads the seccomp filter, and a measuring child decodes with the student helpers' codec.
RUN_PRELOAD = ["IPython.core.interactiveshell", "traitlets.config", "pyseccomp", "compile_course.primitives"]


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


# --- inside a run ----------------------------------------------------------------------------

def reaper(spawn: Spawn, chan_fd: int, out_fd: int, status_fd: int) -> None:
    """The run's first process, in the host's PID namespace; trusted (never runs student code).

    Forked by ``forkserver.fork_child``: it dies with the template and waits for its own child."""
    confine.set_name("grader-reaper")
    notices: list[str] = []
    try:
        notices += confine.unshare_namespaces(spawn.confinement)
        if spawn.confinement != "none" and not any(n.startswith("no mount") for n in notices):
            notices += confine.build_mounts(spawn.hide, dict(zip(spawn.reveal, spawn.reveal_from, strict=True)),
                                            confine.course_paths(),
                                            spawn.compile_cache, spawn.cache_writable, spawn.uid,
                                            read_only=spawn.confinement == "userns", cover=spawn.cover)
    except Exception as exc:  # the run must not start half-confined
        _report(status_fd, Started(pid=0, notices=[f"confinement failed: {exc}"], nonce=spawn.nonce))
        os._exit(70)
    scratch = None
    if not confine.MOUNTED:  # unconfined: no private /tmp, so a folder of its own, removed when the run ends
        import tempfile

        scratch = confine.WORKDIR = tempfile.mkdtemp(prefix="course-grader-run-")
    # A run without a pids cgroup: its worker hands the reaper the listener of its task gate on this pair.
    gate_ours, gate_theirs = socket.socketpair() if spawn.task_limit else (None, None)
    host_proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY) if spawn.task_limit else -1   # before init's /proc
    pid = os.fork()
    if pid == 0:
        os.close(status_fd)
        if gate_ours:
            gate_ours.close()
            os.close(host_proc)
        init(spawn, chan_fd, out_fd, gate_theirs.detach() if gate_theirs else -1)
    os.close(chan_fd)
    os.close(out_fd)
    _report(status_fd, Started(pid=pid, notices=notices, nonce=spawn.nonce))
    if gate_ours:
        gate_theirs.close()
        status = _wait_gated(spawn, pid, gate_ours.detach(), host_proc, status_fd)
    else:
        _, status = os.waitpid(pid, 0)
    if scratch:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    _report(status_fd, Exited(status=os.waitstatus_to_exitcode(status), nonce=spawn.nonce))
    os._exit(0)


def _wait_gated(spawn: Spawn, pid: int, gate_fd: int, host_proc: int, status_fd: int) -> int:
    """Wait for init while answering the run's task gate; its refusals go to the grader as they come."""
    def refused(total: int) -> bool:
        return _report_now(status_fd, TasksRefused(total=total, nonce=spawn.nonce))

    try:
        return taskgate.supervise(pid, gate_fd, spawn.task_limit, host_proc, refused)
    except taskgate.GateError as exc:   # init is killed; no Exited: the grader takes it for its own fault
        os.write(2, f"course-grader: the task gate failed: {exc}\n".encode())
        os._exit(75)


def _report(status_fd: int, message) -> None:
    try:
        protocol.write_all(status_fd, protocol.encode(message))
    except OSError:
        pass  # the grader stopped listening (it closed the run): nothing left to tell


def _report_now(status_fd: int, message) -> bool:
    """Write ``message`` if the pipe has room now; False if it has not (the grader is not reading)."""
    os.set_blocking(status_fd, False)
    try:
        os.write(status_fd, protocol.encode(message))    # under PIPE_BUF: all of it or nothing
    except BlockingIOError:
        return False
    except OSError:
        pass     # the grader stopped listening (it closed the run)
    finally:
        os.set_blocking(status_fd, True)
    return True


def init(spawn: Spawn, chan_fd: int, out_fd: int, gate_fd: int) -> None:
    """PID 1 of the run's namespace: mounts /proc, starts the worker, reaps, exits with its status."""
    confine.set_name("grader-init")
    confine.die_with_parent()
    try:
        # The run's cgroups hold init and everything below it, never the reaper: killing the
        # cgroup ends the run, and the reaper survives to report how it ended.
        confine.join_cgroups(spawn.cgroups)
    except OSError as exc:
        os.write(2, f"course-grader: could not join the run's cgroup: {exc}\n".encode())
        os._exit(72)
    if os.getpid() != 1:  # no PID namespace: nothing to be init of
        worker(spawn, chan_fd, out_fd, gate_fd)
    # The worker is PID 2 of this namespace and, in a user-namespace run, the same uid outside as this
    # process; but this process holds every capability of the run's user namespace and the worker none
    # (dropped, in a nested namespace), so the kernel's ptrace check closes init's /proc/1/fd/N, mem,
    # environ, cwd and root to it. (Init stays dumpable: the grader, outside, reads the run's private
    # tmpfs through /proc/INIT/root.) With no signal handler (the template's Python had one for SIGINT:
    # a student's os.kill(1, SIGINT) ended the run), the kernel drops every signal sent to init from
    # inside its namespace (SIGKILL and SIGSTOP included).
    confine.default_signal_handlers()
    confine.mount_proc()
    worker_pid = os.fork()
    if worker_pid == 0:
        worker(spawn, chan_fd, out_fd, gate_fd)
    os.close(chan_fd)
    os.close(out_fd)
    if gate_fd >= 0:
        os.close(gate_fd)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == worker_pid:
            # Ending PID 1 kills everything else in the namespace. A signal becomes 128 + its number.
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)


def worker(spawn: Spawn, chan_fd: int, out_fd: int, gate_fd: int) -> None:
    """Applies the last limits, drops privileges, loads the seccomp filter (and, without a pids cgroup, the
    task gate, whose listener goes to the reaper on ``gate_fd``), then serves the run's requests."""
    confine.set_name(f"grader-{spawn.mode}")
    try:
        os.setsid()
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        confine.close_fds_except({0, 1, 2, chan_fd, gate_fd})
        env = confine.child_environment(cache=bool(spawn.compile_cache) and confine.MOUNTED)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(confine.WORKDIR)
        if spawn.cache_writable:
            os.umask(0)  # entries a warming run writes must be readable and copy-up-able by every later uid
        import torch

        torch.set_num_threads(spawn.threads)
        confine.set_rlimits(spawn.cpu_s_total, spawn.file_bytes, spawn.open_files, spawn.memory_bytes or None)
        confine.drop_privileges(spawn.uid, spawn.confinement, spawn.max_processes)
        syscall_filter.load()   # last: the steps above need unshare (a nested user namespace) and prctl
        if gate_fd >= 0:
            taskgate.load_and_hand_over(gate_fd)
    except Exception as exc:
        os.write(2, f"course-grader: sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
        os._exit(71)
    if spawn.mode == protocol.RunMode.NOTEBOOK:
        kernel.serve(chan_fd, spawn.nonce)
    else:
        measure.serve(chan_fd, spawn.nonce)
    sys.stdout.flush()
    os._exit(0)


# --- the server loop -------------------------------------------------------------------------

def serve(control: socket.socket) -> None:
    """Fork a run for each request until the grader's end of ``control`` closes (it ended or was killed);
    then end the runs still alive and remove their cgroups (``cgroups.remove_run_dirs``): no run cgroup
    outlives its grader. The grader removes each run's cgroups itself when it closes the run."""
    run_cgroups: list[list[str]] = []      # of runs whose cgroups may still exist
    try:
        _serve(control, run_cgroups)
    finally:
        cgroups.remove_run_dirs([path for paths in run_cgroups for path in paths])


def _serve(control: socket.socket, run_cgroups: list[list[str]]) -> None:
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, SPAWN_BYTES, 3)
        except (ConnectionResetError, OSError):
            return
        if not data:
            return
        try:
            spawn = protocol.decode(data.rstrip(b"\n"), Spawn)
            if len(fds) != 3:
                raise ProtocolError(f"spawn needs 3 descriptors, got {len(fds)}")
        except ProtocolError as exc:
            for fd in fds:
                os.close(fd)
            os.write(2, f"course-grader template: bad request: {exc}\n".encode())
            continue
        run_cgroups[:] = [paths for paths in run_cgroups if any(os.path.isdir(p) for p in paths)]
        if spawn.cgroups:
            run_cgroups.append(list(spawn.cgroups))
        if forkserver.fork_child(control) == 0:
            reaper(spawn, *fds)
        for fd in fds:
            os.close(fd)


def main(argv: list[str]) -> int:
    confine.set_name("grader-template")
    control = socket.socket(fileno=int(argv[1]))
    forkserver.preload(RUN_PRELOAD)
    forkserver.ignore_children()   # finished reapers are reaped by the kernel
    ready = TemplateReady(pid=os.getpid(), threads=thread_count(), nonce=argv[2] if len(argv) > 2 else "")
    control.sendall(protocol.encode(ready))
    serve(control)
    return 0


if __name__ == "__main__":
    main(sys.argv)
    os._exit(0)  # no interpreter teardown: torch's atexit work is not needed to stop forking
