"""The fork-server core (course_grader.forkserver) on its own: no template, no kernel.

Both servers that use it are tested whole elsewhere: the sandbox's template by
tests/course_grader/sandbox/ (every run is its fork), the warm kernels by
tests/course_tools/test_warm_kernels.py.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys

import pytest

from course_grader import forkserver

SERVER = """
import json, os, signal, socket, sys, time
from course_grader import forkserver
forkserver.ignore_children()
server_socket, _ = socket.socketpair()
report, tell = os.pipe()
pid = forkserver.fork_child(server_socket)
if pid == 0:
    seen = {"sigchld_default": signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,
            "server_socket_closed": server_socket.fileno() == -1}
    os.write(tell, (json.dumps(seen) + "\\n").encode())
    time.sleep(600)
    os._exit(0)
print(json.dumps({"child": pid, "server_sigchld_ignored": signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN,
                  **json.loads(os.read(report, 1000))}), flush=True)
time.sleep(600)
"""


def test_a_forked_child_waits_for_its_own_children_closes_the_servers_socket_and_dies_with_it():
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        seen = json.loads(server.stdout.readline())
        child = os.pidfd_open(seen.pop("child"))
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    try:
        assert seen == {"server_sigchld_ignored": True, "sigchld_default": True, "server_socket_closed": True}
        assert select.select([child], [], [], 30)[0], "the child outlived its server"
    finally:
        os.close(child)


def test_a_child_whose_server_is_already_gone_exits_at_once():
    # its parent is this test, not pid 1: as if the server had died between the fork and the prctl
    done = subprocess.run([sys.executable, "-c", "from course_grader import forkserver; forkserver.die_with_parent(1)"],
                          timeout=60)
    assert done.returncode == forkserver.EXIT_ORPHANED


def test_a_missing_module_is_skipped_and_a_broken_one_raises(tmp_path, monkeypatch):
    (tmp_path / "fs_needs_what_is_missing.py").write_text("import fs_no_such_dependency\n")
    (tmp_path / "fs_present.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert forkserver.import_present(["fs_present", "fs_no_such_module", "fs_present.sub"]) == [
        "fs_no_such_module", "fs_present.sub"]
    with pytest.raises(ModuleNotFoundError, match="fs_no_such_dependency"):
        forkserver.import_present(["fs_needs_what_is_missing"])


def test_every_module_either_server_preloads_exists():
    """A renamed helper would be skipped silently, and every run and lesson kernel would import it again."""
    # in a child process: importing the template module sets its thread and signal policy
    code = ("import json\n"
            "from course_grader import forkserver\n"
            "from course_grader.sandbox import template\n"
            "from course_tools.warm_kernels import server\n"
            "print(json.dumps(forkserver.preload([*template.RUN_PRELOAD, *server.KERNEL_PRELOAD])))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
