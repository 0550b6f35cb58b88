"""Trace one lesson function with ``TORCH_TRACE`` and turn the trace into tlparse's HTML report.

``write_report(out)`` runs ``traced_lesson`` in a fresh Python process with
``TORCH_TRACE`` pointing at a temporary folder, then runs the ``tlparse``
command (the PyPI package of that name, pinned in requirements.txt) on the
trace and leaves the report in ``out`` (``out/index.html``). The report is
tlparse's own; the only change is that a link tlparse always prints, to a
collectives report it writes only for distributed runs, is dropped when that
file does not exist, so the published site has no dead link.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TRACE_TIMEOUT_S = 600  # a cold torch import plus an eager-backend compile; minutes on a loaded machine
TLPARSE_TIMEOUT_S = 120
# tlparse's own option for a header: a way back into the course site
BACK_LINKS = ('<p><a href="../tlparse.html">How this report was made</a> · '
              '<a href="../index.html">Course home</a></p>')
_COLLECTIVES_PARAGRAPH = re.compile(r"<p>\s*<a href=\"collectives_parity\.json\">.*?</p>\s*", re.DOTALL)


def tlparse_command() -> str:
    """The venv's ``tlparse`` (next to this Python), else the one on PATH."""
    beside = Path(sys.executable).with_name("tlparse")
    found = str(beside) if beside.exists() else shutil.which("tlparse")
    if not found:
        raise FileNotFoundError("tlparse is not installed: pip install -r requirements.txt")
    return found


def write_trace(trace_dir: Path) -> list[Path]:
    """Run the traced lesson with ``TORCH_TRACE=trace_dir``; return the trace files it wrote."""
    env = dict(os.environ, TORCH_TRACE=str(trace_dir))
    subprocess.run([sys.executable, "-m", "course_tools.site.traced_lesson"], env=env, check=True,
                   timeout=TRACE_TIMEOUT_S)
    logs = sorted(trace_dir.glob("*.log"))
    if not logs:
        raise RuntimeError(f"TORCH_TRACE wrote no log into {trace_dir}")
    return logs


def write_report(out: Path) -> Path:
    """Trace the lesson function, run tlparse into ``out``; return ``out/index.html``."""
    with tempfile.TemporaryDirectory(prefix="course-trace-") as tmp:
        (log,) = write_trace(Path(tmp))  # one process, one rank: one log file
        subprocess.run([tlparse_command(), str(log), "-o", str(out), "--overwrite", "--no-browser",
                        "--custom-header-html", BACK_LINKS],
                       check=True, timeout=TLPARSE_TIMEOUT_S)
    index = out / "index.html"
    if not (out / "collectives_parity.json").exists():
        index.write_text(_COLLECTIVES_PARAGRAPH.sub("", index.read_text(encoding="utf-8")), encoding="utf-8")
    return index


if __name__ == "__main__":
    print(write_report(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tl_out")))
