"""Build the hub's shared environment at PREFIX from the student edition, as TLJH builds ``/opt/tljh/user``.

A venv made from a Python every user can run, owned by whoever builds it (root, on a hub), readable and
runnable by everyone, writable by nobody else. In order:

1. the base Python: the one the instructor's venv was made from, when every user can run it; else the
   system's Python of the same minor (``/usr/bin/python3.11``), since a Python under ``/root`` is closed
   to students (the hub trial's ``PermissionError: '.venv/bin/python'``); ``--python`` names another;
2. the edition's files as committed (``git archive HEAD`` of a local edition, a shallow clone of a URL):
   what the students' nbgitpuller link brings them, nothing of the checkout;
3. ``python -m venv --without-pip PREFIX``;
4. the third-party packages at the versions of the edition's ``requirements.lock``, hard-linked from the
   instructor's venv (:mod:`.link_packages`: no download, no wheel build);
5. the course's packages, **non-editable**, by the environment's own pip from the edition's tree
   (``pip install --no-deps --no-index --no-build-isolation``): a copy inside PREFIX, with no path back
   to the checkout;
6. JupyterLab's course settings into ``PREFIX/share/jupyter/lab/settings`` (Lab's own place for them);
7. every file and folder opened to reading by all (a file written under a strict umask is fixed);
8. the scan (:mod:`.scan`) of what is now installed; any finding stops the build;
9. the marker ``PREFIX/.course-hub-env.json`` (edition, commit, Python, what was scanned), written last:
   the hub's start (hub/start.py) uses only an environment that has it.

A second build of the same PREFIX replaces it (servers started later run the new one). A PREFIX that
exists and is not one this command made is refused, as is the instructor's own venv.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from compile_course.paths import ROOT

from ..lock import parse
from .link_packages import Linked, LinkError, link_packages
from .reach import closed_to_others
from .scan import Audit, audit

MARK = ".course-hub-env.json"
DEFAULT_PREFIX = Path("/opt/torch-compile-course/env")
EDITION_MARK = ".course-edition.json"      # course publish's mark at an edition's root
ASK_TIMEOUT_S = 120


class BuildError(RuntimeError):
    """The environment cannot be built as asked; says why and what to do (exit 2)."""


class Leaked(BuildError):
    """The built environment holds what students must not read; it is left without its marker (exit 1)."""


@dataclass
class Built:
    prefix: Path
    python: Path
    edition: str
    commit: str
    linked: Linked
    audit: Audit
    seconds: float


def read_mark(prefix: Path) -> dict | None:
    """The marker of a complete environment at ``prefix``, or None (none, or a build that did not finish)."""
    try:
        mark = json.loads((Path(prefix) / MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return mark if mark.get("complete") else None


def site_packages(prefix: Path, minor: str) -> Path:
    return Path(prefix) / "lib" / f"python{minor}" / "site-packages"


def _ask(python: Path) -> tuple[str, str]:
    """``(major.minor, base prefix)`` of another interpreter."""
    done = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2]); "
                           "print(sys.base_prefix)"], capture_output=True, text=True, timeout=ASK_TIMEOUT_S)
    if done.returncode != 0:
        raise BuildError(f"{python} does not run: {done.stderr.strip()[:300]}")
    minor, base = done.stdout.split()
    return minor, base


def choose_python(explicit: Path | None, say: Callable[[str], None] = print) -> Path:
    """The base Python of the environment (see the module's step 1)."""
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [Path(explicit)] if explicit else [Path(sys._base_executable), Path(f"/usr/bin/python{minor}")]
    for python in candidates:
        if not python.exists():
            if explicit:
                raise BuildError(f"--python {python}: no such file")
            continue
        theirs, base = _ask(python)
        if theirs != minor:
            if explicit:
                raise BuildError(f"--python {python} is Python {theirs}; the instructor's venv, whose packages the "
                                 f"environment takes, is {minor}: give a Python {minor}")
            continue
        closed = closed_to_others(python, stat.S_IXOTH) or closed_to_others(Path(base) / "lib" / f"python{minor}"
                                                                            / "os.py")
        if closed is None:
            return python
        say(f"hub-env: not {python}: {closed} is closed to other users, so students could not run it")
        if explicit:
            break
    raise BuildError(f"no Python {minor} that every user can run: install your system's (Debian: apt-get install "
                     f"python{minor} python{minor}-dev) and give it with --python /usr/bin/python{minor}, or open the "
                     "folder named above (chmod o+x)")


def edition_tree(edition: str, into: Path, branch: str = "main") -> str:
    """Write the edition's committed files into ``into``; return its commit (12 hex digits)."""
    if "://" in edition or edition.startswith("git@"):
        done = subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", branch, edition, str(into)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"cannot clone the edition {edition}: {done.stderr.strip()[:300]}")
        shutil.rmtree(into / ".git", ignore_errors=True)
        commit = subprocess.run(["git", "ls-remote", edition, f"refs/heads/{branch}"], capture_output=True,
                                text=True).stdout.split("\t")[0][:12]
    else:
        path = Path(edition).resolve()
        git = ["git", "-c", f"safe.directory={path}", "-C", str(path)]
        done = subprocess.run([*git, "archive", "--format=tar", branch], capture_output=True)
        if done.returncode != 0:
            raise BuildError(f"{path} is not a student edition with a branch {branch} (course publish makes one): "
                             f"{done.stderr.decode(errors='replace').strip()[:300]}")
        into.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile() as fh:
            fh.write(done.stdout)
            fh.seek(0)
            with tarfile.open(fileobj=fh) as tar:
                tar.extractall(into, filter="data")
        commit = subprocess.run([*git, "rev-parse", "--short=12", branch], capture_output=True,
                                text=True).stdout.strip()
    if not (into / EDITION_MARK).is_file():
        raise BuildError(f"{edition} is not a student edition: no {EDITION_MARK} (make one with course publish DEST)")
    return commit


def _prepare_prefix(prefix: Path, source: Path) -> None:
    if not prefix.is_absolute():
        raise BuildError(f"{prefix}: give an absolute path, e.g. {DEFAULT_PREFIX}")
    real, src = Path(os.path.realpath(prefix)), Path(os.path.realpath(source))
    if real == src or src.is_relative_to(real) or real.is_relative_to(src):
        raise BuildError(f"{prefix} is the instructor's venv ({source}) or holds it: give a folder of its own")
    if prefix.exists() and any(prefix.iterdir()):
        if not (prefix / MARK).is_file():
            raise BuildError(f"{prefix} exists and is not an environment course hub-env made (no {MARK}): "
                             "give a new or empty folder")
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    prefix.chmod(0o755)
    (prefix / MARK).write_text(json.dumps({"made_by": "course hub-env", "complete": False}) + "\n")


def _open_everything(prefix: Path) -> None:
    """Folders 0755; files not shared with another venv readable by all (pip honours the umask)."""
    for folder, _dirs, files in os.walk(prefix):
        os.chmod(folder, 0o755)
        for name in files:
            path = Path(folder) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode) or st.st_nlink > 1:   # a link made by link_packages: checked there
                continue
            mode = stat.S_IMODE(st.st_mode)
            path.chmod((mode | 0o444 | (0o111 if mode & stat.S_IXUSR else 0)) & ~0o022)


def build(prefix: Path, edition: str, *, python: Path | None = None, source: Path | None = None,
          root: Path = ROOT, solutions: Path | None = None, branch: str = "main",
          say: Callable[[str], None] = print) -> Built:
    """Build the environment at ``prefix`` (see the module's docstring); raises ``BuildError``."""
    started = last = time.monotonic()

    def took() -> str:
        """Seconds since the previous call: the time of the step a line reports."""
        nonlocal last
        now, before = time.monotonic(), last
        last = now
        return f"({now - before:.0f} s)"

    prefix, source = Path(prefix), Path(source or sys.prefix)
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    base = choose_python(python, say)
    say(f"hub-env [1/6] base Python: {base} (every user can run it)")
    _prepare_prefix(prefix, source)
    with tempfile.TemporaryDirectory(prefix="hub-env-edition-") as tmp:
        tree = Path(tmp) / "edition"
        commit = edition_tree(edition, tree, branch)
        say(f"hub-env [2/6] the student edition {edition} at {commit}")
        done = subprocess.run([str(base), "-m", "venv", "--without-pip", str(prefix)], capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"{base} -m venv {prefix} failed: {done.stderr.strip()[:300]}")
        say(f"hub-env [3/6] a venv at {prefix}; the third-party packages of the edition's requirements.lock, "
            f"from {source} (hard links where safe: no download) {took()}")
        try:
            lock = parse((tree / "requirements.lock").read_text(encoding="utf-8"))
            linked = link_packages(source, site_packages(source, minor), prefix, site_packages(prefix, minor), lock)
        except (LinkError, OSError, ValueError) as exc:
            raise BuildError(str(exc)) from exc
        say(f"          {len(linked.packages)} packages: {linked.linked} files linked, {linked.copied} copied, "
            f"{linked.scripts} scripts {took()}")
        if linked.left_out:
            say(f"          left out (not in the lock): {', '.join(linked.left_out)}")
        say("hub-env [4/6] the course's packages from the edition, non-editable (pip install --no-deps)")
        done = subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                               "--no-index", "--no-build-isolation", "--no-cache-dir", "--disable-pip-version-check",
                               "--root-user-action=ignore", str(tree)], capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"pip could not install the edition's packages: {(done.stderr or done.stdout)[-800:]}")
        say(f"          installed {took()}")
        settings = tree / "lab" / "settings"
        if settings.is_dir():
            shutil.copytree(settings, prefix / "share" / "jupyter" / "lab" / "settings", dirs_exist_ok=True)
    _open_everything(prefix)
    say("hub-env [5/6] scanning the installed environment: solutions, hidden tests' lines, instructor-only modules")
    found = audit(prefix, root=root, solutions=solutions)
    say(f"          {found.scanned} {took()}")
    if found.problems:
        raise Leaked("the environment holds what students must not read (it is left incomplete; the hub "
                         "will not use it): " + "; ".join(found.problems[:5])
                         + (f" (+{len(found.problems) - 5} more)" if len(found.problems) > 5 else ""))
    seconds = time.monotonic() - started
    (prefix / MARK).write_text(json.dumps({
        "made_by": "course hub-env", "complete": True, "edition": edition, "commit": commit, "python": str(base),
        "from_venv": str(source), "packages": len(linked.packages), "scanned": found.scanned,
        "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": round(seconds, 1)}, indent=1) + "\n")
    (prefix / MARK).chmod(0o644)
    say(f"hub-env [6/6] done in {seconds:.0f} s: {prefix} (students' servers run {prefix / 'bin'})")
    return Built(prefix, base, edition, commit, linked, found, seconds)
