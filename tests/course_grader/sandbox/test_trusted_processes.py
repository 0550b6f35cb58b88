"""The run's own trusted processes are out of its code's reach, in both modes, kernel and measuring child.

In a user-namespace run the worker's uid outside is the same as its init's (an ordinary user maps
one uid only), but init holds the capabilities of the run's user namespace and the worker none, so
the kernel closes init's ``/proc/1`` descriptors, memory and links to the worker; init keeps no
signal handler, so the kernel drops the signals the worker sends it (without that, SIGINT ended the run).
As root the worker has a leased uid of its own besides. The reaper and the template sit in the
host's PID namespace, which the run cannot see or name at all.
"""

from __future__ import annotations

import json

from course_grader.status import CellStatus

from sandbox_probes import needs_confinement

pytestmark = needs_confinement

# ``HOST_PIDS``: the host pids of the run's reaper and of the template, as the grader sees them.
REACH_TRUSTED = r'''
import json, os, resource, signal, time
tried = {}
def attempt(name, fn):
    try:
        fn()
        tried[name] = "done"
    except OSError as exc:
        tried[name] = type(exc).__name__
try:
    fds = os.listdir("/proc/1/fd")   # the numbers: refused as root; in user namespaces the listing shows
except OSError:
    fds = []
for fd in fds or ["0", "1", "2", "3"]:
    attempt(f"fd {fd}", lambda fd=fd: os.close(os.open(f"/proc/1/fd/{fd}", os.O_RDONLY)))
attempt("environ", lambda: open("/proc/1/environ", "rb").read())
attempt("mem", lambda: open("/proc/1/mem", "rb").close())
attempt("cwd", lambda: os.readlink("/proc/1/cwd"))
attempt("root", lambda: os.listdir("/proc/1/root/"))
attempt("prlimit", lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (0, 0)))
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGSTOP, signal.SIGKILL):
    try:
        os.kill(1, sig)
    except PermissionError:
        pass
for pid in HOST_PIDS:   # no such process in the run's namespace
    attempt(f"kill {pid}", lambda pid=pid: os.kill(pid, signal.SIGKILL))
    attempt(f"proc {pid}", lambda pid=pid: os.listdir(f"/proc/{pid}/fd"))
time.sleep(1)
result = {"pid": os.getpid(), "tried": tried}
'''

REFUSED = {"PermissionError"}
ABSENT = {"ProcessLookupError", "FileNotFoundError"}


def _check(report: dict, host_pids: list[int]) -> None:
    assert report["pid"] == 2, report                  # init is PID 1 of the run's own namespace
    tried = report["tried"]
    reached = {name: how for name, how in tried.items()
               if how not in (ABSENT if name.split()[-1] in map(str, host_pids) else REFUSED)}
    assert reached == {}, reached
    assert {"environ", "mem", "cwd", "root", "prlimit"} <= set(tried), tried


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def test_the_kernel_cannot_open_signal_or_limit_its_init_nor_reach_its_reaper(host):
    with host.notebook_kernel() as kernel:
        reaper = _parent(kernel.run.init_pid)
        host_pids = [reaper, host.ensure_template().proc.pid]
        assert 2 not in host_pids and 1 not in host_pids
        result = kernel.run_cell(f"HOST_PIDS = {host_pids!r}\n{REACH_TRUSTED}print(json.dumps(result))", "reach-init")
        assert result.status is CellStatus.OK, result
        _check(json.loads(result.output), host_pids)
        # init got none of the signals: the run goes on
        after = kernel.run_cell("import os\nprint(os.getpid(), os.getppid())", "after")
        assert after.status is CellStatus.OK and after.output == "2 1\n", after


def test_a_measuring_child_cannot_reach_its_init_or_the_template(host):
    host_pids = [host.ensure_template().proc.pid]
    reply = host.measure("probe", "run_code", {"code": f"HOST_PIDS = {host_pids!r}\n" + REACH_TRUSTED})
    _check(reply["result"], host_pids)
    assert host.measure("probe", "double", {"n": 4})["y"]        # the next measurement still runs


def test_the_run_cannot_see_its_reaper(host):
    """PID 1 is the run's init; the reaper, its parent, is in a PID namespace the run cannot see."""
    with host.notebook_kernel() as kernel:
        result = kernel.run_cell("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
                                 "print(open('/proc/1/stat').read().split()[3])", "pids")
    pids, parent_of_init = result.output.split("\n")[:2]
    assert json.loads(pids) == [1, 2], result.output   # only init and the kernel itself
    assert parent_of_init == "0", result.output         # init's parent is outside the namespace
