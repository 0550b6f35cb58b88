"""A block of unprivileged uids that belongs to one grader instance while it runs.

The lease is an ``fcntl.flock`` on ``<lock dir>/uid-<N>.lock``: the kernel releases it
when the holder closes it or dies (even by ``kill -9``), so a crashed grader never
leaves a block taken. Two graders, or a grader and the test suite, on one host
therefore never run children under the same uid. The uids are not in /etc/passwd
and own nothing outside a run's private folders.

Inside a block, each concurrent run takes its own uid (``acquire``/``release``).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from course_grader.errors import NoUidAvailable

UID_BASE = 2_000_000          # far above any login or system account
BLOCK_SIZE = 32               # concurrent runs per grader instance
MAX_BLOCKS = 4096
# /run for root; otherwise one folder a user: a /tmp folder shared by name belongs to whichever user made it
# first, and every other user's grader then found no writable lock folder (an ordinary user's runs use uids
# inside its own user namespace, so its leases never need to exclude another user's)
LOCK_DIRS = (Path("/run/course-grader"), Path(f"/tmp/course-grader-uids-{os.getuid()}"))


def lock_dir() -> Path:
    for path in LOCK_DIRS:
        try:
            path.mkdir(mode=0o755, parents=True, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    raise NoUidAvailable("no writable directory for uid lock files")


def block_is_leased(block: int) -> bool:
    """Whether some live grader holds uid block ``block`` (probed with a non-blocking flock).

    Unlike a pid, this answer is the same from every PID namespace on the host."""
    for directory in LOCK_DIRS:
        try:
            fd = os.open(directory / f"uid-{block}.lock", os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)   # also releases the probe's own lock
    return False


class UidLease:
    """Holds one block of ``BLOCK_SIZE`` uids until ``close()`` (or the process's death)."""

    def __init__(self):
        directory = lock_dir()
        self.block, self._fd = -1, -1
        for block in range(MAX_BLOCKS):
            fd = os.open(directory / f"uid-{block}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.block, self._fd = block, fd
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            break
        else:
            raise NoUidAvailable(f"all {MAX_BLOCKS} uid blocks are leased")
        self.first = UID_BASE + self.block * BLOCK_SIZE
        self._free = list(range(self.first, self.first + BLOCK_SIZE))
        self._lock = threading.Lock()

    def acquire(self) -> int:
        with self._lock:
            if not self._free:
                raise NoUidAvailable(f"more than {BLOCK_SIZE} runs at once")
            return self._free.pop(0)

    def release(self, uid: int) -> None:
        with self._lock:
            if self.first <= uid < self.first + BLOCK_SIZE and uid not in self._free:
                self._free.append(uid)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases the flock
            self._fd = -1

    def __enter__(self) -> UidLease:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
