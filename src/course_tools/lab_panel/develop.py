"""What an editable install leaves out: the panel's prebuilt labextension and its server extension's switch.

A wheel (``pip install .``, a hub environment) puts them under ``sys.prefix`` from the data files of
pyproject.toml; setuptools' editable install (``pip install -e .``, the checkout's ``.venv``) installs no data
files (pypa/setuptools#3399). The set-up runs this after it (``python -m course_tools.lab_panel.develop``):
``share/jupyter/labextensions/compile-course-exercises`` becomes a link to the checkout's built copy (so a
rebuild shows at the next page load, as ``jupyter labextension develop`` does it), and the switch is copied
to ``etc/jupyter/jupyter_server_config.d/``. Running it again changes nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from . import LABEXTENSION

HERE = Path(__file__).resolve().parent
BUILT = HERE / "labextension"
SWITCH = HERE / "jupyter-config" / "compile-course.json"


def install(prefix: Path = Path(sys.prefix)) -> list[str]:
    """Link the labextension and copy the switch into ``prefix``; the lines saying what was done."""
    said = []
    link = prefix / "share" / "jupyter" / "labextensions" / LABEXTENSION
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and link.resolve() == BUILT):
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.is_dir():
            shutil.rmtree(link)   # a wheel's copy, from an earlier non-editable install
        os.symlink(BUILT, link)
        said.append(f"linked {link} -> {BUILT}")
    switch = prefix / "etc" / "jupyter" / "jupyter_server_config.d" / SWITCH.name
    switch.parent.mkdir(parents=True, exist_ok=True)
    if not switch.is_file() or switch.read_bytes() != SWITCH.read_bytes():
        shutil.copyfile(SWITCH, switch)
        said.append(f"wrote {switch}")
    return said


if __name__ == "__main__":
    for line in install() or ["the Exercises panel is already installed in this environment"]:
        print(f"  {line}")
