"""Build a second venv with another torch and the course's other pins.

The venv lives in ``build/drift-venv-<torch version>``. It gets every pin of
requirements.txt except torch, the requested torch (a version or a wheel file),
every other package at its version in requirements.lock (as constraints, without
torch, triton and the CUDA packages: another torch pins its own), and a ``.pth``
file that puts this checkout's ``src/`` on its path, so the notebooks import the
same ``compile_course`` without reinstalling it.
It does not touch the course's own ``.venv``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from compile_course.paths import BUILD, REQUIREMENTS, ROOT

from ..lock import LOCK, without_torch_family

STAMP = ".drift-installed"
TORCH_PIN = re.compile(r"^torch==\S+\s*$", re.MULTILINE)
WHEEL_VERSION = re.compile(r"^torch-([^-]+)-")


def torch_requirement(spec: str) -> tuple[str, str]:
    """``(pip requirement, version label)`` for a version like ``2.13.0`` or a wheel path."""
    if spec.endswith(".whl"):
        wheel = Path(spec).expanduser().resolve()
        if not wheel.is_file():
            raise FileNotFoundError(f"no such wheel: {wheel}")
        match = WHEEL_VERSION.match(wheel.name)
        if not match:
            raise ValueError(f"not a torch wheel name: {wheel.name}")
        return str(wheel), match.group(1)
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+]*", spec):
        raise ValueError(f"TORCH must be a version like 2.13.0 or a path to a torch wheel, not {spec!r}")
    return f"torch=={spec}", spec


def other_pins(requirements: Path = REQUIREMENTS) -> str:
    """requirements.txt without its torch line."""
    text = requirements.read_text()
    if not TORCH_PIN.search(text):
        raise ValueError(f"{requirements} has no torch== pin")
    return TORCH_PIN.sub("", text)


def other_constraints(lock: Path = LOCK) -> str:
    """requirements.lock without the torch family (empty when there is no lock): the drift venv's
    other packages at the versions of the course's own venv, so only torch and what it brings differ."""
    return without_torch_family(lock.read_text()) if lock.exists() else ""


def pinned_torch(requirements: Path = REQUIREMENTS) -> str | None:
    """The course's torch pin (read here too, so the report does not import torch)."""
    match = TORCH_PIN.search(requirements.read_text())
    return match.group(0).strip().split("==", 1)[1] if match else None


def venv_dir(label: str) -> Path:
    return BUILD / f"drift-venv-{label}"


def _run(command: list, what: str) -> None:
    print(f"  $ {' '.join(str(c) for c in command)}", flush=True)
    proc = subprocess.run(command, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"{what} failed with exit code {proc.returncode}")


def build_venv(spec: str, python: str = sys.executable) -> tuple[Path, str]:
    """Create (or reuse) the drift venv for ``spec``; return ``(venv, version label)``."""
    requirement, label = torch_requirement(spec)
    venv = venv_dir(label)
    stamp = venv / STAMP
    constraints_text = other_constraints()
    wanted = requirement + "\n" + other_pins() + constraints_text
    if stamp.exists() and stamp.read_text() == wanted:
        print(f"drift venv {venv.relative_to(ROOT)} is up to date", flush=True)
        return venv, label
    print(f"building {venv.relative_to(ROOT)} with {requirement} (torch is a download of several hundred MB to GB)",
          flush=True)
    if not (venv / "bin" / "python").exists():
        _run([python, "-m", "venv", str(venv)], "creating the venv")
    pins = venv / "requirements-other.txt"
    pins.write_text(other_pins())
    constraints = venv / "constraints-other.txt"
    constraints.write_text(constraints_text)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--progress-bar", "on"]
    _run(pip + [requirement, "-r", str(pins)] + (["-c", str(constraints)] if constraints_text else []),
         "installing torch and the other pins")
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "compile_course_checkout.pth").write_text(str(ROOT / "src") + "\n")
    stamp.write_text(wanted)
    return venv, label
