"""The third-party packages of the hub's environment, taken from the instructor's venv without a download.

torch and its CUDA libraries are about 6 GB; ``pip install`` of the same lock into a second venv takes
minutes even with every wheel on disk, and re-downloads them when pip's cache is empty (it is, here:
the set-up's wheels are not kept). The packages are already installed, once, at the lock's versions, in
the instructor's venv. This module puts the same files into the new venv, package by package, as each
package's own ``RECORD`` (the list pip wrote when it installed it) names them:

* only packages at the version ``requirements.lock`` pins (and pip itself) are taken; a package the
  lock does not name (something installed by hand) is left out and named; a locked package missing or
  at another version stops the build (the instructor's venv is not the lock's);
* the course's own package (``compile-course``, editable: it points into the checkout) is never
  taken; the build installs it non-editable from the student edition instead;
* a file is **hard-linked** when that is safe: the same file system, owned by whoever builds (root, on
  a hub), writable by nobody else and readable by everyone; otherwise it is copied, and the copy is
  made readable by everyone. A hard link shares the file, not the folder: pip never edits an installed
  file in place (an upgrade writes new files and unlinks the old ones), so the instructor's later
  ``pip install`` leaves the hub's files as they are; an editor that writes a venv's file in place
  would change both, which is why the environment's owner must own the files it links;
* a script in ``bin/`` is copied with its first line pointing at the new venv's Python (pip's own two
  forms: ``#!/path/python`` and the ``/bin/sh`` trampoline it writes for long paths).

Hand-written (about 120 lines) because no maintained tool does this: ``virtualenv-clone`` copies a
whole venv (the editable course included) and rewrites paths in every text file; ``pip install`` with
``--find-links`` needs wheels, which are gone once installed.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from course_tools.lock import NOT_LOCKED, canonical

COURSE_DIST = "compile-course"     # the course's own package: installed from the edition, never linked


class LinkError(RuntimeError):
    """The instructor's venv cannot give the hub's environment its packages; says why and how to fix it."""


@dataclass
class Linked:
    packages: list[str] = field(default_factory=list)    # name==version of each package taken
    left_out: list[str] = field(default_factory=list)    # packages of the venv the lock does not name
    linked: int = 0
    copied: int = 0
    scripts: int = 0


def locked_distributions(site: Path, lock: dict[str, str]) -> tuple[list[md.Distribution], list[str]]:
    """``(packages to take, names left out)`` of the venv whose site-packages is ``site``, checked against
    ``lock`` (``{canonical name: version}``). Raises ``LinkError`` when a locked package is missing or differs."""
    found: dict[str, md.Distribution] = {}
    for dist in md.distributions(path=[str(site)]):
        found.setdefault(canonical(dist.metadata["Name"]), dist)
    wrong = [f"{name}=={version} (the venv has {found[name].version if name in found else 'none'})"
             for name, version in sorted(lock.items()) if name not in found or found[name].version != version]
    if wrong:
        raise LinkError(f"the instructor's venv ({site}) is not the one requirements.lock pins: {', '.join(wrong[:5])}"
                        f"{' ...' if len(wrong) > 5 else ''}. Set it up again (make clean-venv, then make test) "
                        "or build from a venv that matches (--from-venv)")
    take = [d for n, d in sorted(found.items()) if n in lock or n in NOT_LOCKED]
    left_out = sorted(f"{n}=={d.version}" for n, d in found.items() if n not in lock and n not in NOT_LOCKED
                      and n != COURSE_DIST)
    return take, left_out


def link_packages(source_prefix: Path, source_site: Path, dest_prefix: Path, dest_site: Path,
                  lock: dict[str, str]) -> Linked:
    """Put every locked package of the venv ``source_prefix`` into the venv ``dest_prefix``."""
    dists, left_out = locked_distributions(source_site, lock)
    done = Linked(left_out=left_out)
    # path strings, not Path objects: about 55,000 files, and pathlib's parsing was most of the time
    source_top, source_site = os.path.realpath(source_prefix) + os.sep, os.path.realpath(source_site)
    dest_top, dest_site = str(dest_prefix) + os.sep, str(dest_site)
    python = Path(dest_prefix) / "bin" / "python"
    device = os.stat(dest_prefix).st_dev
    made: set[str] = set()
    for dist in dists:
        if dist.files is None:
            raise LinkError(f"{dist.metadata['Name']} {dist.version} has no RECORD in {source_site}: its files "
                            "are not known; reinstall it in the instructor's venv with pip")
        for entry in dist.files:
            source = os.path.normpath(os.path.join(source_site, str(entry)))
            try:
                st = os.stat(source)
            except OSError:
                continue                     # listed and gone (a .pyc never written)
            if not source.startswith(source_top) or not stat.S_ISREG(st.st_mode):
                continue                     # outside the venv
            target = os.path.normpath(os.path.join(dest_site, str(entry)))
            if not target.startswith(dest_top):
                raise LinkError(f"{dist.metadata['Name']}'s RECORD names {entry}, outside the environment")
            if (parent := os.path.dirname(target)) not in made:
                os.makedirs(parent, mode=0o755, exist_ok=True)
                made.add(parent)
            if source[len(source_top):].startswith(f"bin{os.sep}"):
                _write_script(Path(source), Path(target), python)
                done.scripts += 1
            elif _safe_to_link(st, device):
                try:
                    os.link(source, target)
                except FileExistsError:      # two packages list one file (a shared namespace's __init__)
                    os.unlink(target)
                    os.link(source, target)
                done.linked += 1
            else:
                shutil.copy2(source, target)
                _open_to_all(Path(target))
                done.copied += 1
        done.packages.append(f"{dist.metadata['Name']}=={dist.version}")
    return done


def _safe_to_link(st: os.stat_result, device: int) -> bool:
    """A file the new environment may share: same file system, ours, writable by nobody else, readable
    (and, if it is a program, runnable) by everyone."""
    mode = stat.S_IMODE(st.st_mode)
    runnable_ok = not mode & stat.S_IXUSR or mode & stat.S_IXOTH
    return (st.st_dev == device and st.st_uid == os.geteuid() and not mode & 0o022 and bool(mode & stat.S_IROTH)
            and bool(runnable_ok))


def _open_to_all(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod((mode | 0o444 | (0o111 if mode & stat.S_IXUSR else 0)) & ~0o022)


def _write_script(source: Path, target: Path, python: Path) -> None:
    """A copy of pip's script ``source`` that runs ``python``."""
    lines = source.read_bytes().split(b"\n")
    if lines[0].startswith(b"#!/bin/sh") and len(lines) > 2 and lines[1].startswith(b"'''exec'"):
        lines = lines[2:]                                  # pip's trampoline for a long interpreter path
        lines[0] = b"#!" + str(python).encode()
    elif lines[0].startswith(b"#!") and b"python" in lines[0]:
        lines[0] = b"#!" + str(python).encode()
    if target.exists() or target.is_symlink():
        target.unlink()
    target.write_bytes(b"\n".join(lines))
    target.chmod(0o755)
