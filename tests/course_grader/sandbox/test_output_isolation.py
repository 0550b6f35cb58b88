"""A kernel of one grading run cannot list or read another run's output folder."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="kernels run as leased uids only under root")

# Beside the repository: outside /tmp (private in every run) and outside the paths a host hides,
# in a world-readable folder, so only the output's own permissions protect it.
# When the checkout itself lives under /tmp (a CI clone), its parent is private in every run,
# so a folder under /var/lib stands in for "beside the repository".
_PRIVATE = ("/tmp", "/dev/shm", "/var/tmp", "/run/lock")
_BESIDE = Path(__file__).resolve().parents[4]
SHARED = (Path("/var/lib") if any(str(_BESIDE) == d or str(_BESIDE).startswith(d + "/") for d in _PRIVATE)
          else _BESIDE)


def test_another_runs_outputs_are_root_only_and_unreadable_from_a_kernel(host, submission, grade_fake, tmp_path):
    submission("rae", "ex01")
    visible = SHARED / f".grader-isolation-{secrets.token_hex(6)}"
    visible.mkdir(mode=0o755)
    os.chmod(visible, 0o755)
    out = visible / "out-b"
    try:
        grade_fake(tmp_path / "subs", out)            # run B, graded with a stand-in host
        files = list(out.rglob("*"))
        assert (out / "gradebook.sqlite").exists() and (out / "grades.csv").exists() and (out / "review.csv").exists()
        assert stat.S_IMODE(out.stat().st_mode) == 0o700 and out.stat().st_uid == 0
        for p in files:
            assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600), p
        probe = ("import os\n"
                 f"for p in [{str(out)!r}, {str(out / 'grades.csv')!r}, {str(out / 'gradebook.sqlite')!r}]:\n"
                 "    try:\n"
                 "        print(len(os.listdir(p)) if os.path.isdir(p) else len(open(p).read()))\n"
                 "    except OSError as e:\n"
                 "        print(type(e).__name__)\n"
                 f"print(os.path.exists({str(visible)!r}))")
        with host.notebook_kernel() as kernel:
            lines = kernel.run_cell(probe).output.splitlines()
        assert lines[-1] == "True"                        # the parent is visible: permissions do the work
        assert lines[:3] == ["PermissionError"] * 3, lines
    finally:
        shutil.rmtree(visible, ignore_errors=True)
