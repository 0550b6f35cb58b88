"""``make lab-panel``: rebuild the Exercises panel's prebuilt labextension from its TypeScript (maintainers only).

The source is ``lab/extension/`` (package.json, package-lock.json, tsconfig.json, src/, style/). This runs
``npm ci`` there, TypeScript, then JupyterLab's builder (``@jupyterlab/builder``, through ``jupyter-builder
build`` of this environment, against the installed JupyterLab's own core package) in production mode without
source maps, into ``labextension/`` beside this module, which is committed: students install it prebuilt and
never need node. ``labextension/source.sha256`` stamps the build with a digest of its source, and
``tests/course_tools/test_lab_panel_build.py`` fails when the source changed and the build was not redone.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from compile_course.paths import ROOT

SOURCE = ROOT / "lab" / "extension"
BUILT = Path(__file__).resolve().parent / "labextension"
STAMP = BUILT / "source.sha256"


def source_files(source: Path = SOURCE) -> list[Path]:
    """Every file the build reads from the source folder (node_modules and TypeScript's output aside)."""
    names = ["package.json", "package-lock.json", "tsconfig.json"]
    files = [source / n for n in names] + sorted((source / "src").glob("*.ts")) + sorted((source / "style").glob("*"))
    return [f for f in files if f.is_file()]


def source_digest(source: Path = SOURCE) -> str:
    digest = hashlib.sha256()
    for path in source_files(source):
        digest.update(path.relative_to(source).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def core_package() -> Path:
    """The installed JupyterLab's core package.json, which the builder shares modules with."""
    import jupyterlab

    return Path(jupyterlab.__file__).parent / "staging"


def main() -> int:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            print(f"make lab-panel: no {tool} on PATH; the rebuild needs node and npm (as root: "
                  "apt-get install nodejs npm). Students never need them: the build is committed.", file=sys.stderr)
            return 2
    builder = Path(sys.executable).with_name("jupyter-builder")
    steps = [["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], ["npx", "tsc"],
             [str(builder), "build", "--core-path", str(core_package()), "."]]
    shutil.rmtree(BUILT, ignore_errors=True)   # no stale chunk of an earlier build stays in static/
    for step in steps:
        print(f"[lab-panel] {' '.join(step)}", flush=True)
        if subprocess.run(step, cwd=SOURCE).returncode != 0:
            print(f"make lab-panel: `{' '.join(step)}` failed (above); nothing committed is complete now: "
                  "git checkout src/course_tools/lab_panel/labextension to go back", file=sys.stderr)
            return 1
    STAMP.write_text(source_digest() + "\n")
    size = sum(f.stat().st_size for f in BUILT.rglob("*") if f.is_file())
    print(f"[lab-panel] built {BUILT.relative_to(ROOT)} ({size / 1024:.0f} kB), stamped {STAMP.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
