"""The kernel spec that names the warm provisioner (entry point ``course-warm-kernels``)."""

from __future__ import annotations

import json
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
