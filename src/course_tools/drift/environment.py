"""Build a second venv with another torch, or from another Python, and the course's other pins.

With another torch (``--torch``), the venv lives in ``build/drift-venv-<torch version>``. It
gets every pin of requirements.txt except torch, the requested torch (a version or a wheel file),
every other package at its version in requirements.lock (as constraints, without
torch, triton and the CUDA packages: another torch pins its own).

From another interpreter (``--python``, alone or with ``--torch``), the venv is made by that
interpreter, outside the checkout (``~/.cache/compile-course/drift/venv-python-<version>[-torch-<version>]``,
``$XDG_CACHE_HOME`` honoured: a CUDA torch is 6 GB, one per Python), after the same check the
set-up makes before pip (``interpreter.py``: CPython 3.11.2 to 3.13, venv, headers, compiler).
Without ``--torch`` it gets requirements.txt and the whole lock, as ``make test`` would install
them there (the lock is resolved for every supported Python).

Every drift venv gets a ``.pth`` file that puts this checkout's ``src/`` on its path, so the
notebooks import the same ``compile_course`` without reinstalling it.
It does not touch the course's own ``.venv``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version as installed_version
from pathlib import Path

from compile_course.paths import BUILD, REQUIREMENTS, ROOT

from .. import interpreter
from ..errors import InterpreterRefused
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


def cache_dir() -> Path:
    """Where the venvs made from other interpreters go: outside the checkout, one per Python (and torch)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "compile-course" / "drift"


def python_facts(python: str) -> tuple[str, str, str]:
    """``(implementation, version, base prefix)`` of ``python``, after the set-up's own check of it
    (run by that interpreter, as the Makefile runs it): raises :class:`InterpreterRefused` with its reasons."""
    said = interpreter.ask(python)
    if said is None:
        raise InterpreterRefused(f"{python} does not run (give the path of a Python 3 interpreter)")
    checker = Path(interpreter.__file__)
    done = subprocess.run([python, str(checker), "--venv", os.devnull], capture_output=True, text=True)
    if done.returncode:
        raise InterpreterRefused(done.stderr.strip() or f"{python} is refused by {checker.name}")
    return said[0], said[1], said[2]


def _label(python_version: str | None, torch_label: str | None) -> str:
    return "-".join(part for part in (python_version and f"python-{python_version}",
                                      torch_label and f"torch-{torch_label}") if part)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _run(command: list, what: str) -> None:
    print(f"  $ {' '.join(str(c) for c in command)}", flush=True)
    proc = subprocess.run(command, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"{what} failed with exit code {proc.returncode}")


def build_venv(spec: str | None, python: str | None = None) -> tuple[Path, str]:
    """Create (or reuse) the drift venv for torch ``spec`` (None: the pinned one) made by interpreter ``python``
    (None: this venv's); return ``(venv, label)``. The label names what differs: ``2.13.0`` (a torch alone,
    as before), ``python-3.12.1``, or ``python-3.12.1-torch-2.13.0``."""
    if spec is None and python is None:
        raise ValueError("give another torch, another Python, or both")
    requirement, torch_label = torch_requirement(spec) if spec is not None else (None, None)
    if python is None:
        label, maker, identity = torch_label, sys.executable, ""
        venv = venv_dir(label)
    else:
        implementation, python_version, prefix = python_facts(python)
        label, maker = _label(python_version, torch_label), python
        identity = f"{implementation} {python_version} {prefix}\n"
        venv = cache_dir() / f"venv-{label}"
    stamp = venv / STAMP
    if requirement is None:   # the pinned torch: requirements.txt and the whole lock, as the set-up installs
        pins_text, constraints_text, first = REQUIREMENTS.read_text(), LOCK.read_text() if LOCK.exists() else "", []
    else:
        pins_text, constraints_text, first = other_pins(), other_constraints(), [requirement]
    wanted = identity + "".join(line + "\n" for line in first) + pins_text + constraints_text
    if stamp.exists() and stamp.read_text() == wanted:
        print(f"drift venv {_shown(venv)} is up to date", flush=True)
        return venv, label
    print(f"building {_shown(venv)} with {requirement or 'the pinned torch'}"
          f"{f' from {python}' if python else ''} (torch is a download of several hundred MB to GB)", flush=True)
    made_by = interpreter.ask(str(venv / "bin" / "python")) if (venv / "bin" / "python").exists() else None
    if identity and made_by is not None and " ".join(made_by) != identity.strip():
        raise InterpreterRefused(f"{venv} was made by {' '.join(made_by)}, not {identity.strip()}: "
                                 "a venv is never reused across interpreters; remove it and run again")
    if not (venv / "bin" / "python").exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        _run([maker, "-m", "venv", str(venv)], "creating the venv")
    venv.mkdir(parents=True, exist_ok=True)
    if python is not None:   # every venv installs with the course's pip, whatever pip its Python brought
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"pip=={installed_version('pip')}"],
             "installing the course's pip")
    pins = venv / "requirements-other.txt"
    pins.write_text(pins_text)
    constraints = venv / "constraints-other.txt"
    constraints.write_text(constraints_text)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--progress-bar", "on"]
    _run(pip + first + ["-r", str(pins)] + (["-c", str(constraints)] if constraints_text else []),
         "installing torch and the other pins")
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "compile_course_checkout.pth").write_text(str(ROOT / "src") + "\n")
    stamp.write_text(wanted)
    return venv, label
