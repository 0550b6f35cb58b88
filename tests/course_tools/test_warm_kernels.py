"""Kernels forked from the warm template (course_tools.warm_kernels) against ordinary ones.

``pytest --nbval`` runs every lesson and solution in warm kernels and compares their outputs
with the stored ones, which ``course execute`` writes with ordinary kernels. These tests check
the rest directly: a warm kernel is forked, sees what an ordinary kernel sees, runs OpenMP and
inductor code, can be interrupted and stopped, and a launch the template does not fit still
gets an (ordinary) kernel.
"""

from __future__ import annotations

import json
import os
import select
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from course_tools.warm_kernels import provisioner
from course_tools.warm_kernels.kernelspec import write_kernelspec

# A lesson's first cell: after it, an ordinary kernel has imported what the template had.
FIRST_CELL = """
from compile_course import start, Case, CompileWatch, explain, torch_logs, compare, measure
import torch
from torch._dynamo.backends.common import aot_autograd
from functorch.compile import make_boxed_func
"""
# What a kernel reports about itself; the stack is the one torch prints in a graph-break log.
PROBE = FIRST_CELL + """
import json, os, sys, threading, traceback
print(json.dumps({
    "cwd": os.getcwd(),
    "path": sys.path,
    "argv": [sys.argv[0], sys.argv[1]],
    "env": sorted(os.environ),
    "stack": [(os.path.basename(f.filename), f.name) for f in traceback.extract_stack()][:6],
    "threads": threading.active_count(),
    "own_group": os.getpgid(0) == os.getpid(),
    "sitecustomize": "sitecustomize" in sys.modules,
    "main": sys.modules["__main__"].__name__,
}))
"""


@pytest.fixture(scope="module")
def warm_spec(pytestconfig, tmp_path_factory):
    """The test run's own warm kernel spec (conftest.py), else one written here.

    The run's spec keeps JUPYTER_PATH as the run's template saw it; changing it would make the
    environment differ from the template's, and every launch here an ordinary one.
    """
    if getattr(pytestconfig, "course_kernel", None):
        yield pytestconfig.course_kernel
        return
    folder = tmp_path_factory.mktemp("kernelspec")
    name = write_kernelspec(folder)
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(folder), saved) if p)
    yield name
    if saved is None:
        os.environ.pop("JUPYTER_PATH")
    else:
        os.environ["JUPYTER_PATH"] = saved


class Kernel:
    def __init__(self, name: str, cwd: Path, **start):
        self.km = KernelManager(kernel_name=name)
        self.km.start_kernel(cwd=str(cwd), **start)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=300)

    def run(self, code: str, timeout: float = 300) -> tuple[str, dict]:
        out = []

        def keep(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = self.kc.execute_interactive(code, output_hook=keep, timeout=timeout)
        return "".join(out), reply["content"]

    def probe(self) -> dict:
        text, reply = self.run(PROBE)
        assert reply["status"] == "ok", reply
        return json.loads(text)

    def stop(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel()


@pytest.fixture
def kernels(warm_spec, tmp_path):
    started = []

    def start(name: str, **kw) -> Kernel:
        started.append(Kernel(name, tmp_path, **kw))
        return started[-1]

    yield start
    for k in started:
        if k.km.has_kernel:
            k.stop()


def test_a_warm_kernel_is_forked_and_sees_what_an_ordinary_kernel_sees(kernels, warm_spec, tmp_path):
    ordinary, warm = kernels("python3"), kernels(warm_spec)
    assert not getattr(ordinary.km.provisioner, "forked", False)
    assert warm.km.provisioner.forked
    loaded = "import sys; print('torch' in sys.modules)"
    assert (warm.run(loaded)[0], ordinary.run(loaded)[0]) == ("True\n", "False\n")   # the template's point
    seen, expected = warm.probe(), ordinary.probe()
    assert seen["cwd"] == str(tmp_path)
    assert seen["stack"][:3] == [["<frozen runpy>", "_run_module_as_main"], ["<frozen runpy>", "_run_code"],
                                 ["ipykernel_launcher.py", "<module>"]]
    assert seen == expected


def test_openmp_and_inductor_run_in_a_warm_kernel(kernels, warm_spec):
    """Importing torch starts OpenMP's pool in the template; libgomp gives the forked kernel its own."""
    warm = kernels(warm_spec)
    assert warm.km.provisioner.forked
    text, reply = warm.run(
        "import os, torch\n"
        "a = torch.randn(512, 512); (a @ a).sum()\n"
        "f = torch.compile(lambda x: (x.sin() + x.cos()).sum())\n"
        "x = torch.randn(100_000)\n"
        "print(torch.get_num_threads(), len(os.listdir('/proc/self/task')) > 1,"
        " torch.allclose(f(x), (x.sin() + x.cos()).sum(), rtol=1e-4))\n")
    assert reply["status"] == "ok", reply
    threads, pool, same = text.split()
    assert int(threads) == (os.cpu_count() or 1) or int(threads) >= 1
    assert same == "True"
    if int(threads) > 1:
        assert pool == "True"


def test_a_warm_kernel_can_be_interrupted_and_stopped(kernels, warm_spec, tmp_path):
    warm = kernels(warm_spec)
    assert warm.km.provisioner.forked
    pid = warm.km.provisioner.pid
    # stop_on_error=False, as nbval sends every cell: otherwise ipykernel aborts the requests that reach
    # it before it has finished handling the error (the interrupt), and whether the next one does is a race
    running = tmp_path / "running"
    msg_id = warm.kc.execute(f"import pathlib, time; pathlib.Path({str(running)!r}).touch(); time.sleep(120)",
                             stop_on_error=False)
    deadline = time.monotonic() + 120              # interrupt the cell once it runs, not its arrival
    while not running.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running.exists(), "the cell never started"
    warm.km.interrupt_kernel()
    # a late kernel_info reply may come first: wait_for_ready asks again each second until one is answered
    while (reply := warm.kc.get_shell_msg(timeout=60))["msg_type"] == "kernel_info_reply":
        pass
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    text, content = warm.run("print(6 * 7)")
    assert content["status"] == "ok" and text == "42\n", content      # still alive after the interrupt
    warm.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_launch_that_does_not_fit_the_template_gets_an_ordinary_kernel(kernels, warm_spec):
    env = {**os.environ, "TORCH_LOGS": "recompiles"}      # read when torch is imported: the template's differs
    kernel = kernels(warm_spec, env=env)
    assert not kernel.km.provisioner.forked
    text, reply = kernel.run("import os, sys; print(os.environ['TORCH_LOGS'], 'torch' in sys.modules)")
    assert reply["status"] == "ok" and text == "recompiles False\n"


def test_the_template_and_its_kernels_end_when_their_owner_closes_it(warm_spec, tmp_path):
    template = provisioner.Template(dict(os.environ))
    km = KernelManager(kernel_name=warm_spec)
    km.write_connection_file()
    pid = template.fork(["-f", km.connection_file], dict(os.environ), str(tmp_path))
    kernel = os.pidfd_open(pid)
    template.close()
    assert select.select([kernel], [], [], 30)[0], "the kernel outlived its template"
    os.close(kernel)
    assert template.proc.poll() is not None
    assert not Path(template.folder.name).exists()
    Path(km.connection_file).unlink()


OWNER = """
import json, os, sys, time
from jupyter_client.connect import write_connection_file
from course_tools.warm_kernels.provisioner import Template
template = Template(dict(os.environ))
connection, _ = write_connection_file(sys.argv[1])
kernel = template.fork(["-f", connection], dict(os.environ), os.path.dirname(connection))
print(json.dumps([template.proc.pid, kernel, template.folder.name]), flush=True)
time.sleep(600)
"""


def test_a_killed_owner_takes_its_template_and_kernels_with_it(tmp_path):
    import signal
    import subprocess
    import sys

    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path / "kernel.json")],
                             stdout=subprocess.PIPE, text=True)
    try:
        template, kernel, folder = json.loads(owner.stdout.readline())
        fds = [os.pidfd_open(template), os.pidfd_open(kernel)]
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    for fd in fds:
        assert select.select([fd], [], [], 30)[0], "a process outlived the killed owner"
        os.close(fd)
    assert not Path(folder).exists(), "the template left its socket folder behind"
