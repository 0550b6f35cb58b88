"""What pip would install from requirements.txt under requirements.lock, for every supported Python at once.

tests/test_pins.py asks, for each Python of ``interpreter.LOCK_TARGETS``, what a fresh
``pip install -r requirements.txt -c requirements.lock`` would pick there (a dry run: metadata only,
see :func:`course_tools.lock.resolve_command`), and compares every package with the lock. One such
run takes pip two to four minutes on this machine, nearly all of it waiting on the indexes (about 200
packages' pages; under a minute of CPU for all three). So :func:`resolve_each`

- starts one pip for every Python not answered yet, all at once (threads, each waiting on its pip);
- keeps each answer, pip's own ``--report`` JSON (what pip said, not a verdict: the caller still
  compares every package with the lock), in ``~/.cache/compile-course/lock-resolve/``
  (``$XDG_CACHE_HOME`` honoured), under a key that hashes everything the answer depends on: the text of
  requirements.txt and of the lock, the target Python, pip's version, pip's configuration
  (``pip config list`` and the ``PIP_*`` environment variables, which name the indexes) and the
  platform. A changed lock or pin, another pip or index: another key, so pip runs again. The key names
  no path, so a fresh clone on the same machine reuses what an earlier clone found;
- resolves again when a kept report is older than :data:`MAX_AGE_DAYS` (an index can change under one
  key: a release yanked), and never keeps a failure (a lock that does not serve a Python is asked again
  every run, and fails every run).

Hand-written (about 100 lines) because pip has no resolver API and no cache of its resolutions; its
HTTP cache keeps the index pages, and the run still takes minutes with it warm.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from compile_course.paths import REQUIREMENTS

from .errors import ResolveError
from .lock import LOCK, pins_of_report, pip_said, resolve_command

MAX_AGE_DAYS = 7
CACHE_NAME = "lock-resolve"
# one pip run may take this long before it counts as hung (the slowest seen here: about 4 minutes)
PIP_TIMEOUT_S = 30 * 60


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "compile-course" / CACHE_NAME


def pip_facts(python: str) -> str:
    """pip's version and configuration as it would run: part of every key."""
    version = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split(" ")[:2]
    config = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PIP_"))
    return "\n".join([" ".join(version), config, *env])


def cache_key(target: str, requirements_text: str, lock_text: str, pip: str) -> str:
    parts = [target, requirements_text, lock_text, pip, platform.system(), platform.machine()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def read_kept(path: Path, now: float) -> dict | None:
    """A kept report still young enough, or None (missing, old or unreadable: pip runs again)."""
    try:
        if now - path.stat().st_mtime > MAX_AGE_DAYS * 86400:
            return None
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def keep(path: Path, report: dict) -> None:
    """Write atomically (two runs at once never read half a file); a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as fh:
            json.dump(report, fh)
        os.replace(fh.name, path)
    except OSError:
        pass


def run_pip(target: str, requirements: Path, lock: Path, python: str) -> dict:
    """One dry run; pip's report, or :class:`ResolveError` with pip's words."""
    with tempfile.TemporaryDirectory(prefix="course-lock-") as tmp:
        report = Path(tmp) / "report.json"
        command = resolve_command(target, requirements, lock, python, report, Path(tmp) / "target")
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        if done.returncode != 0:
            raise ResolveError(target, pip_said(done.stderr))
        return json.loads(report.read_text())


def resolve_each(targets: tuple[str, ...], requirements: Path = REQUIREMENTS, lock: Path = LOCK,
                 python: str = sys.executable, cache: Path | None = None, run=run_pip,
                 say=lambda line: None) -> dict[str, dict[str, str] | ResolveError]:
    """``{target: {canonical name: version}}`` of what pip picks for each target under the lock, or the
    target's :class:`ResolveError`. Kept answers are reused; every other target's pip runs at the same time."""
    cache = cache_dir() if cache is None else cache
    pip = pip_facts(python)
    texts = Path(requirements).read_text(), Path(lock).read_text()
    paths = {target: cache / f"{cache_key(target, *texts, pip)}.json" for target in targets}
    now = time.time()
    reports = {target: kept for target in targets if (kept := read_kept(paths[target], now)) is not None}
    missing = [target for target in targets if target not in reports]
    say(f"pip's resolver for Python {', '.join(targets)}: {len(reports)} answered from {cache}"
        + (f", {len(missing)} resolving at once" if missing else ""))
    answers: dict[str, dict[str, str] | ResolveError] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(missing))) as pool:
        futures = {target: pool.submit(run, target, Path(requirements), Path(lock), python) for target in missing}
        for target, future in futures.items():
            try:
                reports[target] = future.result()
            except ResolveError as exc:
                answers[target] = exc
                continue
            keep(paths[target], reports[target])
    for target, report in reports.items():
        answers[target] = pins_of_report(report)
    return {target: answers[target] for target in targets}
