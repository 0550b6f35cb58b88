"""``course lab``: JupyterLab on the student's workspace, opened at lesson 01.

What it does, in order:

1. brings the workspace up to date (:func:`compile_course.workspace.sync`: new lessons
   and exercises come in, nothing the student changed is overwritten);
2. starts ``jupyter lab`` serving the workspace, with the URL it prints opening lesson 01
   (``ServerApp.default_url``), JupyterLab's settings overrides shipped with the course
   (``lab/settings/overrides.json``: no "Jupyter news" pop-up, no update check; the
   student's own settings still win) and, when run as root (containers, cloud
   notebooks), ``--allow-root``;
3. passes any further arguments to ``jupyter lab`` (``make lab LAB_ARGS="--no-browser
   --port 8899"``).

The workspace is ``work/`` in the checkout; ``COURSE_WORKSPACE`` or ``--dir`` puts it
elsewhere, and when the checkout is not writable (a course installed by someone else)
it falls back to ``~/torch-compile-course-work``, saying so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from compile_course.paths import ROOT
from compile_course.workspace import FIRST_LESSON, sync, workspace_dir

LAB_SETTINGS = ROOT / "lab" / "settings"   # overrides.json: JupyterLab's own mechanism for course-wide defaults


def lab_command(workspace: Path, extra: list[str]) -> list[str]:
    """The ``jupyter lab`` command line (``python -m jupyterlab`` of this environment)."""
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={workspace}",
               f"--LabApp.default_url=/lab/tree/{FIRST_LESSON}",
               f"--LabApp.app_settings_dir={LAB_SETTINGS}"]
    if os.geteuid() == 0 and "--allow-root" not in extra:
        command.append("--allow-root")   # Jupyter refuses root without it; containers often run as root
    return command + list(extra)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    explicit = None
    if argv[:1] == ["--dir"] and len(argv) > 1:
        explicit, argv = argv[1], argv[2:]
    elif argv[:1] and argv[0].startswith("--dir="):
        explicit, argv = argv[0].split("=", 1)[1], argv[1:]
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        print("usage: course lab [--dir WORKSPACE] [jupyter lab arguments...]")
        return 0
    workspace, why = workspace_dir(explicit)
    try:
        report = sync(workspace)
    except OSError as exc:
        print(f"course lab: cannot set up the workspace at {workspace}: {exc.strerror or exc}. "
              "Set COURSE_WORKSPACE to a folder you can write.", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    print(f"your workspace: {workspace} ({why}); lessons in notebooks/, exercises in exercises/", flush=True)
    os.environ["COURSE_WORKSPACE"] = str(workspace)   # the server's Exercises panel and its terminals: this one
    command = lab_command(workspace, argv)
    print("starting JupyterLab; open the URL it prints (it opens lesson 01)", flush=True)
    os.execv(command[0], command)
    return 0  # not reached
