"""The seccomp filter: student code in a kernel or a measuring child cannot make namespaces, mount,
trace, load eBPF or reach the other refused calls; torch.compile (inductor and its C++ compiler) works."""

from __future__ import annotations

import json
import subprocess
import sys

from course_grader.sandbox import syscall_filter
from course_grader.status import CellStatus

from sandbox_probes import needs_confinement, small_limits

# Each call with arguments that, without the filter, fail with another errno or succeed harmlessly
# inside the probe's own process; under the filter each must be EPERM (clone3: ENOSYS).
SYSCALL_PROBE = r'''
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def outcome(r):
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
result = {}
result["unshare"] = outcome(libc.unshare(0x10000000 | 0x00020000))          # user + mount namespace
result["mount"] = outcome(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
result["umount2"] = outcome(libc.umount2(b"/tmp", 0))
result["setns"] = outcome(libc.setns(-1, 0))
result["chroot"] = outcome(libc.chroot(b"/"))
result["ptrace"] = outcome(libc.ptrace(0, 0, 0, 0))                          # PTRACE_TRACEME
result["bpf"] = outcome(libc.syscall(321 if os.uname().machine == "x86_64" else 280, 0, None, 0))
result["keyctl"] = outcome(libc.syscall(250 if os.uname().machine == "x86_64" else 219, 0, 0, 0, 0, 0))
result["clone3"] = outcome(libc.syscall(435, None, 0))
pid = libc.syscall(56 if os.uname().machine == "x86_64" else 220, 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER
if pid == 0:
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
result["clone_newuser"] = outcome(pid)
with open("/proc/self/status") as f:
    result["seccomp"] = [line.split()[1] for line in f if line.startswith("Seccomp:")][0]
print(json.dumps(result, sort_keys=True))
'''
REFUSED = {"unshare": "EPERM", "mount": "EPERM", "umount2": "EPERM", "setns": "EPERM", "chroot": "EPERM",
           "ptrace": "EPERM", "bpf": "EPERM", "keyctl": "EPERM", "clone3": "ENOSYS", "clone_newuser": "EPERM",
           "seccomp": "2"}


def _in_a_child(load: bool) -> dict:
    """The probe in a fresh interpreter, with or without the filter (no root, no sandbox needed)."""
    code = ("import ctypes, sys\nctypes.CDLL(None).prctl(38, 1, 0, 0, 0)\n"   # no_new_privs, as the worker
            + ("from course_grader.sandbox import syscall_filter\nsyscall_filter.load()\n" if load else "")
            + SYSCALL_PROBE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_filter_refuses_each_call_and_nothing_refuses_them_without_it():
    assert _in_a_child(load=True) == REFUSED
    unfiltered = _in_a_child(load=False)
    assert unfiltered["seccomp"] == "0"
    assert all(unfiltered[name] != REFUSED[name] for name in ("setns", "bpf", "clone3", "keyctl")), unfiltered


def test_every_refused_name_is_a_call_libseccomp_knows():
    import pyseccomp

    unknown = [name for name in (*syscall_filter.REFUSED, *syscall_filter.NO_SUCH_CALL)
               if pyseccomp.resolve_syscall(pyseccomp.Arch.X86_64, name) < 0]
    assert unknown == [], "misspelt or not a call on x86_64"


def test_prlimit_of_another_process_is_refused_but_the_own_limits_still_move():
    code = ("import ctypes, os, resource\nctypes.CDLL(None).prctl(38, 1, 0, 0, 0)\n"
            "from course_grader.sandbox import syscall_filter\nsyscall_filter.load()\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
            "print(resource.getrlimit(resource.RLIMIT_NOFILE))\n"
            "try:\n    resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)\nexcept PermissionError:\n"
            "    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["(64, 64)", "refused"], out.stdout + out.stderr


@needs_confinement
def test_a_kernel_cell_gets_eperm_for_unshare_mount_and_the_rest(host):
    with host.notebook_kernel() as kernel:
        result = kernel.run_cell(SYSCALL_PROBE, "escape")
    assert result.status is CellStatus.OK, result
    assert json.loads(result.output) == REFUSED


@needs_confinement
def test_a_measuring_child_runs_under_the_filter_too(host):
    code = SYSCALL_PROBE.replace("print(json.dumps(result, sort_keys=True))", "")
    reply = host.measure("probe", "run_code", {"code": code})
    assert reply["result"] == REFUSED


@needs_confinement
def test_inductor_still_compiles_with_its_cpp_compiler_under_the_filter(host):
    """A cold inductor compile (a C++ kernel built by g++ in a subprocess), threads and a subprocess."""
    code = ("import subprocess, threading, torch\n"
            "f = torch.compile(lambda x: (x.sin() + 1).cos() * 2)\n"
            "x = torch.randn(16)\n"
            "print(torch.allclose(f(x), (x.sin() + 1).cos() * 2))\n"
            "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
            "print(subprocess.run(['true']).returncode)\n"
            "import glob, os\n"   # the run's own, empty inductor cache: the kernel was built here, by g++
            "print(len(glob.glob(os.environ['TORCHINDUCTOR_CACHE_DIR'] + '/**/*.so', recursive=True)) > 0)")
    with host.notebook_kernel(small_limits(cpu_s_per_cell=300, wall_s_backstop=900.0)) as kernel:
        result = kernel.run_cell(code, "compile")
    assert result.status is CellStatus.OK, result
    assert result.output.split() == ["True", "thread", "0", "True"], result.output

