"""The warmed compile cache, kept from one grading run to the next.

Every run warms a compile cache with the model answers before any student code runs
(``orchestrate._warm``); student kernels then see it read-only (copy-on-write). Without a
store each run starts that cache empty and pays every cold inductor compile again, though
the model answers, torch and the grader have not changed.

The store keeps one finished warm-up per key: torch's version, the grader's key (its
version and code hash) and every exercise's hash. A run copies the stored cache for its
key into its own private folder, warms it (mostly cache hits now) and, once the model
answers got full marks and before any student code has run, publishes its copy back.
Student kernels never write the store: it lives under ``build/``, which no kernel can see,
and is root-only (0700), like everything else a run keeps.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from compile_course.paths import BUILD

from .private import private_dir

STORE = BUILD / "grading" / ".compile-cache"
KEEP = 3  # keys kept: the newest by modification time


def cache_key(exercise_hashes: dict[str, str], grader: str) -> str:
    """A folder name that changes when torch, the grader or any exercise changes."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "none"
    text = "\n".join([f"torch {torch_version}", f"grader {grader}",
                      *(f"{eid} {sha}" for eid, sha in sorted(exercise_hashes.items()))])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def prepare(run_dir: Path, key: str, store: Path | None = None) -> tuple[Path, bool]:
    """A new private cache folder in ``run_dir``, filled from the store when it holds ``key``.

    Returns ``(folder, reused)``."""
    store = Path(store or STORE)
    folder = Path(tempfile.mkdtemp(prefix=".compile-cache-", dir=run_dir))
    stored = store / key
    if stored.is_dir() and not stored.is_symlink():
        shutil.copytree(stored, folder, symlinks=True, dirs_exist_ok=True)
        return folder, True
    return folder, False


def publish(folder: Path, key: str, store: Path | None = None) -> Path:
    """Keep a copy of ``folder`` as the store's entry for ``key`` (replacing an older one).

    Another run may publish the same key at the same time; the last rename wins and both
    copies are equally good. Older keys beyond ``KEEP`` are removed."""
    store = private_dir(Path(store or STORE))
    staged = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=store))
    shutil.copytree(folder, staged, symlinks=True, dirs_exist_ok=True)
    os.chmod(staged, 0o700)
    target = store / key
    trash = Path(tempfile.mkdtemp(prefix=f".old-{key}-", dir=store))
    try:
        os.rename(target, trash / "entry")
    except FileNotFoundError:
        pass
    try:
        os.rename(staged, target)
    except OSError:  # another run published this key in between: keep theirs
        shutil.rmtree(staged, ignore_errors=True)
    shutil.rmtree(trash, ignore_errors=True)
    _prune(store)
    return target


def _prune(store: Path, now: float | None = None) -> None:
    """Keep the ``KEEP`` newest keys; drop leftovers of runs that died while publishing (a day old)."""
    import time

    now = now or time.time()
    entries = [p for p in store.iterdir() if p.is_dir() and not p.is_symlink()]
    for left in (p for p in entries if p.name.startswith(".") and now - p.stat().st_mtime > 86400):
        shutil.rmtree(left, ignore_errors=True)
    keys = sorted((p for p in entries if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in keys[KEEP:]:
        shutil.rmtree(stale, ignore_errors=True)
