"""What a run can and cannot see or leave behind: processes, files, hidden folders, network."""

from __future__ import annotations

import ast
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_grader.sandbox import GradingHost
from course_grader.sandbox.policy import git_dirs
from course_grader.status import CellStatus, Confinement

from sandbox_probes import needs_confinement, processes_with, run_uids, runs_alive, small_limits

ROOT = Path(__file__).resolve().parents[3]
pytestmark = needs_confinement


def test_cells_run_in_order_in_a_shell(host):
    with host.notebook_kernel() as kernel:
        assert kernel.run_cell("x = 20", "a").status is CellStatus.OK
        result = kernel.run_cell("print(x + 1)\nx * 2", "b")
        assert result.status is CellStatus.OK and result.output == "21\n40\n"
        err = kernel.run_cell("undefined_name", "c")
        assert err.status is CellStatus.ERROR and err.error.startswith("NameError")
        assert kernel.run_cell("print(x)", "d").output == "20\n"


def test_run_is_pid_1_namespace_under_its_own_uid(host):
    with host.notebook_kernel() as kernel:
        out = kernel.run_cell("import os\n"
                              "print(os.getuid(), os.getpid(), "
                              "sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))").output
    uid, pid, pids = out.split(" ", 2)
    assert int(uid) in run_uids(host)
    assert int(pid) == 2 and pids.strip() == "[1, 2]"   # init and the worker, nothing of the host


def test_nothing_survives_a_run(host):
    marker = f"survivor-{secrets.token_hex(6)}"
    code = ("import subprocess, sys, os\n"
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'],"
            " start_new_session=True)\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'])\n"
            "print('started')")
    with host.notebook_kernel() as kernel:
        assert kernel.run_cell(code).output == "started\n"
        deadline = time.monotonic() + 10
        while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_with(marker)) == 2          # both background sleepers are running
    assert processes_with(marker) == []
    assert runs_alive(host) == []


def test_private_tmp_and_shm_do_not_persist(host):
    name = f"leak-{secrets.token_hex(6)}"
    write = "\n".join(f"open('{d}/{name}', 'w').write('x')" for d in ("/tmp", "/dev/shm", "/var/tmp"))
    with host.notebook_kernel() as kernel:
        assert kernel.run_cell(write).status is CellStatus.OK
        assert kernel.run_cell(f"import os; print(os.path.exists('/tmp/{name}'))").output == "True\n"
    for folder in ("/tmp", "/dev/shm", "/var/tmp"):
        assert not (Path(folder) / name).exists()
    with host.notebook_kernel() as kernel:
        assert kernel.run_cell(f"import os; print([os.path.exists(d + '/{name}') "
                               "for d in ('/tmp', '/dev/shm', '/var/tmp')])").output == "[False, False, False]\n"


PUBLIC_FILE = ROOT / "pyproject.toml"      # a file outside /tmp: covered by /dev/null inside


@pytest.fixture(scope="module")
def hiding_host(tmp_path_factory):
    """A second host of this module, hiding a folder of submissions, a gradebook file and a public file:
    ``(host, secret folder, gradebook)``. Also the "other" host of the two-hosts test."""
    base = tmp_path_factory.mktemp("hidden")
    secret = base / "submissions"
    secret.mkdir()
    (secret / "alice__ex01.ipynb").write_text("{}")
    gradebook = base / "gradebook.sqlite"
    gradebook.write_text("grades")
    with GradingHost(hide=[secret, gradebook, PUBLIC_FILE], compile_cache=None, limits=small_limits()) as host:
        yield host, secret, gradebook


def test_hidden_paths_are_empty_and_student_helpers_visible(hiding_host):
    host, secret, gradebook = hiding_host
    probe = ("import os\n"
             "for p in PATHS:\n"
             "    try:\n"
             # a covered file is /dev/null: it reads as empty
             "        print(p, sorted(os.listdir(p)) if os.path.isdir(p) else repr(open(p).read()))\n"
             "    except OSError as e:\n"
             "        print(p, type(e).__name__)\n"
             f"print(not os.path.exists('{gradebook}') or open('{gradebook}').read() == '')\n"
             "import compile_course.comparison\n"
             "print('compile_course ok')")
    # In a git worktree .git is a file naming the repository elsewhere (the main clone's .git): covered too.
    hidden = [ROOT / "solutions", ROOT / "tests", ROOT / ".git", *git_dirs(ROOT), ROOT / "build",
              ROOT / "src" / "course_grader", secret]
    with host.notebook_kernel() as kernel:
        out = kernel.run_cell(f"PATHS = {[str(p) for p in hidden]!r}\n" + probe).output
        covered = kernel.run_cell(f"print(repr(open('{PUBLIC_FILE}').read()))").output
    lines = out.splitlines()
    for path, line in zip(hidden, lines, strict=False):  # more lines follow the hidden paths
        # A folder absent on the host (build/ in a fresh clone) is absent inside too; under /tmp
        # (pytest's tmp_path) a hidden folder is not even there: /tmp itself is private.
        # inside another hidden folder (a worktree's folder in the main clone's .git) it is absent too.
        absent = (not path.exists() or str(path).startswith("/tmp/")
                  or any(other in path.parents for other in hidden))
        empty = f"{path} ''" if path.is_file() else f"{path} []"   # a hidden file reads as empty (/dev/null)
        assert line == empty or (absent and line == f"{path} FileNotFoundError"), line
    assert lines[len(hidden)] == "True"                  # the gradebook file reads as empty
    assert lines[-1] == "compile_course ok"
    assert covered == "''\n"
    assert (secret / "alice__ex01.ipynb").exists() and gradebook.read_text() == "grades"
    assert PUBLIC_FILE.read_text().startswith("[build-system]")


def test_grader_package_cannot_be_imported_by_the_kernel(host):
    with host.notebook_kernel() as kernel:
        for module in ("course_grader.verdict.testcells", "course_grader.harness", "course_grader.exercise.model"):
            result = kernel.run_cell(f"import {module}")
            assert result.status is CellStatus.ERROR and "ModuleNotFoundError" in result.error, (module, result)


def test_measuring_child_sees_harness_but_not_the_rest(host):
    reply = host.measure("probe", "listing", {"paths": [str(ROOT / "src" / "course_grader"),
                                                        str(ROOT / "solutions")]})
    listing = reply["listing"]
    assert listing[str(ROOT / "src" / "course_grader")] == ["harness"]
    assert listing[str(ROOT / "solutions")] == []
    assert reply["uid"] in run_uids(host) and reply["pid"] == 2


def test_no_network(host):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = ("import socket\n"
                f"for addr in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
                "    try:\n"
                "        socket.create_connection(addr, timeout=3).close(); print('connected')\n"
                "    except OSError as e:\n"
                "        print('refused', type(e).__name__)\n")
        with host.notebook_kernel() as kernel:
            out = kernel.run_cell(code).output
    finally:
        server.close()
    assert "connected" not in out and out.count("refused") == 2


def test_two_hosts_get_different_uids_and_do_not_disturb_each_other(host, hiding_host):
    other = hiding_host[0]                                # a second host, of other settings
    assert set(other.uid_block).isdisjoint(host.uid_block)   # as root; in user namespaces both are empty
    assert other.template is host.template                # and the process's one template (hides travel per run)
    with host.notebook_kernel() as a, other.notebook_kernel() as b:
        a.run_cell("import os, time")
        b.run_cell("import os, time")
        uid_a = int(a.run_cell("print(os.getuid())").output)
        uid_b = int(b.run_cell("print(os.getuid())").output)
        assert uid_a in run_uids(host) and uid_b in run_uids(other)
        with other.notebook_kernel() as c:                # a run of the other host ends meanwhile...
            c.run_cell("while True: pass")
        assert b.run_cell("print('b alive')").output == "b alive\n"   # ...and neither kernel noticed
        assert a.run_cell("print('a alive')").output == "a alive\n"


def test_template_is_single_threaded_when_it_forks(host):
    assert host.template.ready.threads == 1
    assert host.template.notices == []


def test_without_cgroups_rlimits_still_end_a_cpu_loop(monkeypatch):
    from course_grader.sandbox import host as host_module
    from course_grader.sandbox.cgroups import CgroupPlan

    monkeypatch.setattr(host_module.CgroupPlan, "detect",
                        classmethod(lambda cls: CgroupPlan(notices=["no writable cgroup (test)"])))
    with GradingHost(hide=[], limits=small_limits()) as degraded:
        # as root, the patched plan; an ordinary user never has a cgroup here, and the notice says what replaces it
        assert "no writable cgroup (test)" in degraded.notices or (
            degraded.confinement is Confinement.USERNS and "RLIMIT_CPU" in " ".join(degraded.notices))
        with degraded.notebook_kernel() as kernel:
            assert kernel.run_cell("print(1)").output == "1\n"
            result = kernel.run_cell("while True: pass", "loop")
    assert result.fault.value == "cpu-time" and "cell loop" in result.error


def test_kernel_has_no_grader_module_but_the_sandbox_itself(host):
    with host.notebook_kernel() as kernel:
        out = kernel.run_cell("import sys\n"
                              "print(sorted(m for m in sys.modules if m.startswith('course_grader')))").output
    loaded = ast.literal_eval(out)
    # the sandbox, and the wire format both sides of every run share (messages and their payloads: data
    # types only, loaded by the template before it forks), and the fork-server core the template shares with
    # the warm lesson kernels (a preload list and the fork: it imports nothing of the grader), and the
    # grader's exception classes (errors.py: the wire format's errors, importing nothing); no grading,
    # verdict or harness code
    assert loaded and all(m in ("course_grader", "course_grader.wire", "course_grader.forkserver",
                                "course_grader.errors")
                          or m.startswith(("course_grader.sandbox", "course_grader.wire.protocol",
                                           "course_grader.wire.payloads", "course_grader.status"))
                          for m in loaded), loaded


def test_a_killed_grader_leaves_no_run_behind():
    marker = f"orphan-{secrets.token_hex(6)}"
    grader = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from course_grader.sandbox import GradingHost, Limits
with GradingHost(hide=[]) as host:
    with host.notebook_kernel() as kernel:
        kernel.run_cell("import subprocess, sys\\n"
                        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'])")
        print('ready', flush=True)
        time.sleep(600)
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert grader.stdout.readline().strip() == "ready"
        assert processes_with(marker)
    finally:
        grader.kill()            # SIGKILL: no context manager exit runs
        grader.wait()
    deadline = time.monotonic() + 20
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []


def test_concurrent_runs_from_worker_threads(host):
    """``course grade run --jobs N`` opens kernels and measurements from several threads at once."""
    from concurrent.futures import ThreadPoolExecutor

    def one(n: int):
        with host.notebook_kernel() as kernel:
            out = kernel.run_cell(f"import os\nprint(os.getuid(), {n} * 2)").output.split()
        return int(out[0]), int(out[1]), host.measure("probe", "listing", {"paths": []})["uid"]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(8)))
    assert [r[1] for r in results] == [n * 2 for n in range(8)]
    assert all(r[0] in run_uids(host) and r[2] in run_uids(host) for r in results)
    assert runs_alive(host) == []


def test_system_v_ipc_does_not_outlive_the_run(host):
    key = 0x5A000000 + secrets.randbelow(1 << 20)
    code = ("import ctypes\n"
            f"shmid = ctypes.CDLL(None, use_errno=True).shmget({key}, 4096, 0o1000 | 0o600)\n"  # IPC_CREAT
            "print(shmid >= 0)")
    with host.notebook_kernel() as kernel:
        assert kernel.run_cell(code).output == "True\n"
        assert f"{key:d}" not in Path("/proc/sysvipc/shm").read_text().split()   # not in the host's namespace
    assert f"{key:d}" not in Path("/proc/sysvipc/shm").read_text().split()


def test_an_unconfined_run_leaves_no_folder_in_tmp(monkeypatch):
    """--unconfined (where user namespaces are off): the run's scratch folder is removed when it ends."""
    import glob

    from course_grader.sandbox import host as host_module

    monkeypatch.setattr(host_module, "confinement_mode", lambda unconfined=False: Confinement.NONE)
    before = set(glob.glob("/tmp/course-grader-run-*"))
    with GradingHost(hide=[], limits=small_limits()) as unconfined:
        assert unconfined.confinement is Confinement.NONE and any("unconfined" in n for n in unconfined.notices)
        with unconfined.notebook_kernel() as kernel:
            cwd = kernel.run_cell("import os; open('scratch', 'w').write('x'); print(os.getcwd())").output.strip()
    assert cwd.startswith("/tmp/course-grader-run-")
    deadline = time.monotonic() + 5
    while os.path.exists(cwd) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(cwd) and set(glob.glob("/tmp/course-grader-run-*")) <= before


def test_the_graders_own_private_files_are_out_of_sight(host):
    """As root a run's leased uid cannot enter root's home; in user namespaces (the run's uid outside is
    the grader's own) the grader's home is covered, with the checkout and Python bound back."""
    import pwd

    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    secret = home / f".course-grader-probe-{secrets.token_hex(6)}"
    secret.write_text("other classes' grades")
    secret.chmod(0o600)
    try:
        with host.notebook_kernel() as kernel:
            out = kernel.run_cell(f"try:\n    print(open({str(secret)!r}).read())\n"
                                  "except OSError as e:\n    print(type(e).__name__)").output
            sees_course = kernel.run_cell("import compile_course, torch; print('course ok')").output
    finally:
        secret.unlink()
    assert "other classes' grades" not in out and out.strip() in ("PermissionError", "FileNotFoundError"), out
    assert sees_course == "course ok\n"
