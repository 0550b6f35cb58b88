"""The warm-up, kept from one grading run to the next.

Before any student code runs, a run grades each exercise's model answers
(``pipeline.warmup``). That fills a compile cache which student kernels then see
read-only (copy-on-write), makes the instructor's reference measurements, and proves the
exercise's verdicts work: the model answers must get full auto marks. Without a store
each run paid all of it again, cold inductor compiles included, though the model
answers, torch and the grader had not changed.

The store keeps one finished warm-up per key (torch's version, the grader's key, which
hashes its code, and every exercise's hash), as a folder ``<key>/`` holding

* ``cache/``: the compile cache the model answers filled (copied into a run's own
  folder, the one its kernels see);
* ``warm-up.json``: the exercises whose model answers got full marks, and the measuring
  replies made for them. Kernels never see it.

A run reads an entry under a shared lock and writes one under an exclusive lock (one lock
file per key), so two graders on one machine never warm the same key twice: the second
waits for the first and starts from its entry. An entry is published only right after a
warm-up succeeded, from a folder that no student run has written (student runs see it
through a copy-on-write overlay). Everything lives under ``build/``, which no kernel can
see, and is root-only (0700, files 0600).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from compile_course.paths import BUILD
from course_grader.results.private import FILE_MODE, private_dir

STORE = BUILD / "grading" / ".compile-cache"
STORE_ENV = "COURSE_GRADER_STORE"   # another store folder (the benchmarks start from an empty one)
KEEP = 8  # keys kept: the most recently used (a few hundred kB each)
CACHE = "cache"
RECORD = "warm-up.json"
FORMAT = 1


def cache_key(exercise_hashes: dict[str, str], grader: str) -> str:
    """A folder name that changes when torch, the grader or any exercise changes."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "none"
    text = "\n".join([f"torch {torch_version}", f"grader {grader}",
                      *(f"{eid} {sha}" for eid, sha in sorted(exercise_hashes.items()))])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def default_store() -> Path:
    """``$COURSE_GRADER_STORE`` when set, else ``.compile-cache`` in the grading folder
    (``build/grading/``, or ``~/course-grading/`` for a user who cannot write the checkout)."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    from course_grader.results.private import grading_root

    return grading_root()[0] / STORE.name


def open_entry(exercise_hashes: dict[str, str], grader: str, store: Path | None = None) -> tuple[Entry | None, str]:
    """``(entry, "")`` for this run's key in ``store`` (created 0700 when missing), or
    ``(None, problem)`` when the store cannot be used (for example: not root, in a checkout root
    owns); the run then warms up without it."""
    store = Path(store or default_store())
    try:
        private_dir(store)
    except OSError as exc:
        return None, f"warm-up store {store}: cannot use it ({exc.strerror or exc}); this run warms up without it"
    return Entry(cache_key(exercise_hashes, grader), store), ""


RUN_FOLDER = ".compile-cache-"


def _host_tag() -> str:
    """This machine, as a folder-name part (a results folder may be on a disk other machines share)."""
    return hashlib.sha256(os.uname().nodename.encode()).hexdigest()[:8]


def _start_ticks(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat field 22), or None when
    there is no such process. A pid reused by a later process has another start time."""
    from course_grader.sandbox.proctree import STARTTIME, stat_field, stat_fields

    try:
        return stat_field(stat_fields(pid), STARTTIME).decode()
    except OSError:
        return None


SEED_LIMIT_BYTES = 256 << 20
NOT_SEEDED = ("fxgraph", "aotautograd", "locks", "precompiled_headers")  # headers: 158 MB each


def seed_compiled_kernels(folder: Path) -> None:
    """Copy this machine's inductor cache into ``folder``, without its compiled graphs: its compiled C++
    (kernels, inductor's ISA probes) if under 256 MB, readable and writable by every run's uid.

    A first run then still compiles every graph (each one misses the FX graph cache), but finds the
    C++ the same code compiled to before instead of running g++ again (~5-10 CPU-s a kernel). The
    instructor's own cache is the source: no student code has written to it. No cache: nothing to do."""
    import torch._inductor.runtime.cache_dir_utils as cache_dir_utils

    base = Path(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or cache_dir_utils.default_cache_dir())
    try:
        entries = [p for p in base.iterdir() if p.name not in NOT_SEEDED and not p.is_symlink()]
        size = sum(f.stat().st_size for p in entries for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
        if size > SEED_LIMIT_BYTES:
            return
        for p in entries:
            if p.is_dir():
                shutil.copytree(p, folder / p.name, dirs_exist_ok=True)
            else:
                shutil.copy2(p, folder / p.name)
        for entry in folder.rglob("*"):
            entry.chmod(entry.stat().st_mode | (0o777 if entry.is_dir() else 0o666))
    except OSError:
        pass  # no usable cache on this machine: the first run compiles the C++ too, which only takes longer


def new_folder(run_dir: Path) -> Path:
    """An empty private compile-cache folder for one run (filled by :meth:`Entry.copy_into`).

    Named ``.compile-cache-<host>-<pid>-<start>-<random>`` after the grader that owns it, so that
    :func:`sweep_run_folders` can tell the folder of a grader that died (``kill -9`` skips the
    cleanup) from a live one's."""
    owner = f"{_host_tag()}-{os.getpid()}-{_start_ticks(os.getpid()) or 0}-"
    return Path(tempfile.mkdtemp(prefix=RUN_FOLDER + owner, dir=run_dir))


def sweep_run_folders(run_dir: Path) -> list[Path]:
    """Remove the run folders (:func:`new_folder`) that graders which died left in ``run_dir``.

    A folder is removed only when it names this machine and its process is gone: no process has that
    pid, or the one that has it started at another time. A live grader's folder, one of another
    machine, or one whose name does not say (made by an older grader) is left alone. Returns the
    folders removed."""
    removed = []
    try:
        entries = list(Path(run_dir).iterdir())
    except OSError:
        return removed
    host = _host_tag()
    for folder in entries:
        parts = folder.name[len(RUN_FOLDER):].split("-") if folder.name.startswith(RUN_FOLDER) else []
        if len(parts) < 4 or parts[0] != host or not parts[1].isdigit() or folder.is_symlink():
            continue
        pid, start = int(parts[1]), parts[2]
        if pid == os.getpid() or _start_ticks(pid) == start:
            continue   # its grader is alive
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


class Entry:
    """The store's entry for one key."""

    def __init__(self, key: str, store: Path | None = None):
        self.key = key
        self.store = Path(store or default_store())
        self.path = self.store / key

    @contextmanager
    def lock(self, exclusive: bool) -> Iterator[None]:
        """Shared to read the entry, exclusive to warm up and publish it (blocks until granted)."""
        fd = _lock_file(private_dir(self.store), self.key)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)   # releases the lock

    def record(self) -> dict | None:
        """``{"exercises": {id: sha}, "replies": [[harness, entry, payload, reply], ...]}`` or None."""
        path = self.path / RECORD
        if self.path.is_symlink() or path.is_symlink() or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        return data

    def copy_into(self, folder: Path) -> bool:
        """Copy the stored compile cache into ``folder``; False when the key has none."""
        cache = self.path / CACHE
        if self.path.is_symlink() or cache.is_symlink() or not cache.is_dir():
            return False
        shutil.copytree(cache, folder, symlinks=True, dirs_exist_ok=True)
        os.utime(self.path)   # recently used: kept by _prune
        return True

    def publish(self, folder: Path, exercises: dict[str, str], replies: list) -> Path:
        """Replace the entry with ``folder``'s compile cache and this warm-up's record.

        Call it holding the exclusive lock. Older keys beyond ``KEEP`` are removed."""
        private_dir(self.store)
        staged = Path(tempfile.mkdtemp(prefix=f".{self.key}-", dir=self.store))
        shutil.copytree(folder, staged / CACHE, symlinks=True)
        record = staged / RECORD
        fd = os.open(record, os.O_CREAT | os.O_WRONLY | os.O_EXCL, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"format": FORMAT, "exercises": exercises, "replies": replies}, fh)
        os.chmod(staged, 0o700)
        trash = Path(tempfile.mkdtemp(prefix=f".old-{self.key}-", dir=self.store))
        try:
            os.rename(self.path, trash / "entry")
        except FileNotFoundError:
            pass
        os.rename(staged, self.path)
        shutil.rmtree(trash, ignore_errors=True)
        _prune(self.store)
        return self.path


def _lock_file(store: Path, key: str) -> int:
    """An open descriptor of ``key``'s lock file (0600, created when missing) for ``fcntl.flock``."""
    return os.open(store / f".lock-{key}", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, FILE_MODE)


def _prune(store: Path, now: float | None = None) -> None:
    """Keep the ``KEEP`` newest keys (a key in use is kept); drop leftovers of runs that died
    while publishing (a day old)."""
    now = now or time.time()
    entries = [p for p in store.iterdir() if p.is_dir() and not p.is_symlink()]
    for left in (p for p in entries if p.name.startswith(".") and now - p.stat().st_mtime > 86400):
        shutil.rmtree(left, ignore_errors=True)
    keys = sorted((p for p in entries if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in keys[KEEP:]:
        fd = _lock_file(store, stale.name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:   # another run is reading or warming it
            continue
        else:
            shutil.rmtree(stale, ignore_errors=True)
        finally:
            os.close(fd)
