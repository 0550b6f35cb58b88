"""The Exercises panel's committed build: it is its source's (the stamp), small, loadable, and installed.

``make lab-panel`` rebuilds ``src/course_tools/lab_panel/labextension/`` from ``lab/extension/`` and stamps it
with the source's digest; an edit of the source without a rebuild fails here. The build is a production one
(no source maps), small, and its package.json points at a file that exists. This environment's JupyterLab
lists it enabled, and a wheel of the package carries it and the server extension's switch as data files
(a non-editable install, as a hub environment's, puts them under the prefix).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from course_tools.lab_panel import LABEXTENSION
from course_tools.lab_panel.build import BUILT, SOURCE, STAMP, source_digest

ROOT = Path(__file__).resolve().parents[2]
MAX_BUILD_BYTES = 200 * 1024


def test_the_committed_build_is_of_the_current_source():
    assert STAMP.read_text().strip() == source_digest(), (
        "lab/extension/ changed since the panel was built: run `make lab-panel` and commit the build")


def test_a_changed_source_no_longer_matches_the_stamp(tmp_path):
    import shutil

    copy = tmp_path / "extension"
    copy.mkdir()
    for name in ("package.json", "package-lock.json", "tsconfig.json"):
        shutil.copy(SOURCE / name, copy / name)
    for folder in ("src", "style"):
        shutil.copytree(SOURCE / folder, copy / folder)
    assert source_digest(copy) == source_digest()
    (copy / "src" / "index.ts").write_text((copy / "src" / "index.ts").read_text() + "\n// an edit\n")
    assert source_digest(copy) != STAMP.read_text().strip()


def test_the_build_is_small_loadable_and_has_no_source_maps():
    built = json.loads((BUILT / "package.json").read_text())
    source = json.loads((SOURCE / "package.json").read_text())
    assert (built["name"], built["version"]) == (source["name"], source["version"]) == (LABEXTENSION, built["version"])
    assert (BUILT / built["jupyterlab"]["_build"]["load"]).is_file()
    files = [f for f in BUILT.rglob("*") if f.is_file()]
    assert not [f for f in files if f.suffix == ".map"]
    assert sum(f.stat().st_size for f in files) < MAX_BUILD_BYTES


def test_jupyterlab_here_lists_the_panel_enabled_and_the_server_extension_on():
    bin_dir = Path(sys.executable).parent
    labext = subprocess.run([str(bin_dir / "jupyter"), "labextension", "list"], capture_output=True, text=True,
                            timeout=300)
    line = next((ln for ln in (labext.stdout + labext.stderr).splitlines() if LABEXTENSION in ln), "")
    assert "enabled" in line and "OK" in line, labext.stdout + labext.stderr
    server = subprocess.run([str(bin_dir / "jupyter"), "server", "extension", "list"], capture_output=True, text=True,
                            timeout=300)
    line = next((ln for ln in (server.stdout + server.stderr).splitlines() if "course_tools.lab_panel" in ln), "")
    assert "enabled" in line, server.stdout + server.stderr


def test_a_wheel_carries_the_build_and_the_switch_as_data_files(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, timeout=600, capture_output=True)
    wheel = next(tmp_path.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    data = next(n.split("/data/")[0] for n in names if "/data/" in n) + "/data/"
    shipped = {n.removeprefix(data) for n in names if n.startswith(data)}
    want = {f"share/jupyter/labextensions/{LABEXTENSION}/{f.relative_to(BUILT).as_posix()}"
            for f in BUILT.rglob("*") if f.is_file() and f != STAMP}
    assert want <= shipped, sorted(want - shipped)
    assert "etc/jupyter/jupyter_server_config.d/compile-course.json" in shipped


def test_the_typescript_side_names_the_protocols_routes_and_states_as_protocol_py_writes_them():
    from course_tools.lab_panel.handlers import routes
    from course_tools.lab_panel.protocol import NAMESPACE, JobState, Mode, Status

    ts = (SOURCE / "src" / "index.ts").read_text()
    css = (SOURCE / "style" / "index.css").read_text()
    assert f"const NAMESPACE = '{NAMESPACE}';" in ts
    served = [pattern for pattern, _, _ in routes("/")]
    asked = {"exercises": "`exercises${query}`", "exercises/(ex[0-9]{2}_[A-Za-z0-9_]+)/(check|handin)":
             "`exercises/${ex.name}/${action}`", "feedback": "'feedback'", "jobs/([0-9a-f]+)": "`jobs/${job.id}`"}
    assert served == [f"/{NAMESPACE}/{route}" for route in asked]
    assert all(call in ts for call in asked.values()), [c for c in asked.values() if c not in ts]
    assert "action: 'check' | 'handin'" in ts
    for state in [*JobState, *Mode]:
        assert f"'{state}'" in ts, state
    assert f"'{Status.MISSING}'" in ts
    for status in (Status.CHECKED, Status.HANDED_IN, Status.RETURNED):
        assert f"[data-status='{status}']" in css, status
