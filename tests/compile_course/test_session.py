"""session.start() and the stderr policy in quiet.py."""

import logging
import re
import subprocess
import sys
from pathlib import Path

import torch

from compile_course import quiet, session
from compile_course.quiet import apply_log_policy, set_quiet_logs

ROOT = Path(__file__).resolve().parents[2]


def pinned_in_requirements() -> str:
    return re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE).group(1)


def test_pin_is_read_from_requirements():
    assert session.REQUIREMENTS == ROOT / "requirements.txt"
    assert session.pinned_torch() == pinned_in_requirements() == "2.14.1"


def test_pinned_torch_without_requirements(monkeypatch, tmp_path):
    monkeypatch.setattr(session, "REQUIREMENTS", tmp_path / "missing.txt")
    assert session.pinned_torch() is None
    (tmp_path / "req.txt").write_text("numpy==2.4.6\ntorchvision==0.99\n")
    monkeypatch.setattr(session, "REQUIREMENTS", tmp_path / "req.txt")
    assert session.pinned_torch() is None


def test_start_prints_the_boundary_line(capfd):
    session.start()
    out, err = capfd.readouterr()
    v = sys.version_info
    assert out == f"torch 2.14.1 | python {v.major}.{v.minor} | cpu\n"
    assert err == ""


def test_version_line_drops_the_wheel_local_tag(monkeypatch):
    v = sys.version_info
    for wheel in ("2.14.1+cu130", "2.14.1+cpu", "2.14.1"):
        monkeypatch.setattr(torch, "__version__", wheel)
        assert session.version_line() == f"torch 2.14.1 | python {v.major}.{v.minor} | cpu"


def test_start_seeds_and_warns_on_a_different_pin(capsys, monkeypatch, tmp_path):
    session.start(seed=7)
    a = torch.rand(3)
    session.start(seed=7)
    assert torch.equal(a, torch.rand(3))
    (tmp_path / "req.txt").write_text("torch==9.9.9\n")
    monkeypatch.setattr(session, "REQUIREMENTS", tmp_path / "req.txt")
    session.start()
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("torch 2.14.1 |")
    assert lines[-1] == "WARNING: outputs were recorded with torch 9.9.9; yours may differ."


def test_noisy_loggers_are_silenced(capfd):
    set_quiet_logs()
    for name in quiet.NOISY_LOGGERS:
        logger = logging.getLogger(name)
        assert logger.getEffectiveLevel() == logging.CRITICAL
        logger.error("No CUDA runtime is found, using CUDA_HOME='/usr/local'")
    assert capfd.readouterr().err == ""


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_importing_compile_course_silences_cpp_extension_before_torch():
    # Control: a CUDA build of torch on a CPU-only machine warns when cpp_extension is imported.
    if not torch.cuda.is_available() and torch.version.cuda:
        plain = run_python("import torch.utils.cpp_extension")
        assert "No CUDA runtime is found" in plain.stderr
    quiet_run = run_python("import compile_course, torch.utils.cpp_extension, logging;"
                           "print(logging.getLogger('torch.utils.cpp_extension').level)")
    assert quiet_run.returncode == 0, quiet_run.stderr
    assert quiet_run.stdout.strip() == str(logging.CRITICAL)
    assert quiet_run.stderr == ""


def f(x, n):
    return x * n


def hit_recompile_limit():
    torch._dynamo.reset()
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False, recompile_limit=2):
        compiled = torch.compile(f, backend="eager")
        for size in range(1, 5):
            compiled(torch.ones(size), 2)
    torch._dynamo.reset()


def with_break(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


def test_dynamo_warnings_do_not_reach_stderr_after_set_quiet_logs(capfd):
    try:
        # Controls: torch's default logging does print these to stderr.
        torch._logging.set_logs()
        hit_recompile_limit()
        assert "hit config.recompile_limit" in capfd.readouterr().err
        torch._logging.set_logs(graph_breaks=True)
        torch.compile(with_break, backend="eager")(torch.ones(2))
        assert "Graph break" in capfd.readouterr().err
        torch._dynamo.reset()

        set_quiet_logs()
        hit_recompile_limit()
        torch.compile(with_break, backend="eager")(torch.ones(2))
        assert capfd.readouterr().err == ""
    finally:
        set_quiet_logs()
        torch._dynamo.reset()


def test_apply_log_policy_turns_extras_off_afterwards(capfd):
    with apply_log_policy(recompiles=True):
        pass  # inside, the recompiles artifact is on (recompile_log relies on it)
    compiled = torch.compile(f, backend="eager")
    compiled(torch.ones(2), 2)
    compiled(torch.ones(2, dtype=torch.float64), 2)
    assert capfd.readouterr().err == ""
    torch._dynamo.reset()
