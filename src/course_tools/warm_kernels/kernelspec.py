"""The kernel spec that names the warm provisioner (entry point ``course-warm-kernels``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ipykernel.kernelspec import get_kernel_dict

NAME = "course-warm"
PROVISIONER = "course-warm-kernels"


def write_kernelspec(jupyter_path: Path) -> str:
    """Write ``jupyter_path/kernels/course-warm/kernel.json`` (this Python's ipykernel) and return its name.

    Put ``jupyter_path`` on ``JUPYTER_PATH`` for jupyter_client to find it.
    """
    spec = get_kernel_dict()            # argv: [this python, -m, ipykernel_launcher, -f, {connection_file}]
    spec["display_name"] = "Python 3 (course, warm start)"
    spec.setdefault("metadata", {})["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    folder = jupyter_path / "kernels" / NAME
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1))
    return NAME


@contextmanager
def warm_kernels(kernel: str = "python3") -> Iterator[str]:
    """The kernel name to run notebooks with: the warm spec, found on ``JUPYTER_PATH`` while the block
    lasts (then the folder goes and the variable is as it was); ``kernel`` itself when
    ``COURSE_WARM_KERNELS=0`` turns the warm start off. A launch the template does not fit still starts
    an ordinary kernel (``provisioner``)."""
    if os.environ.get("COURSE_WARM_KERNELS", "1") == "0":
        yield kernel
        return
    folder = tempfile.mkdtemp(prefix="course-kernelspec-")
    before = os.environ.get("JUPYTER_PATH")
    try:
        name = write_kernelspec(Path(folder))
        os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (folder, before) if p)
        yield name
    finally:
        if before is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = before
        shutil.rmtree(folder, ignore_errors=True)
