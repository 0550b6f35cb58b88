"""A run's mount table as data: ``plan_mounts`` lists its operations in order, without touching the system.

Bubblewrap's idea (its ``SetupOp`` list): the table is first a list of typed operations, built
from the run's inputs and from what ``FileFacts`` says of the file system (read once, by
``mounts.survey``), then performed in order in the run's reaper (``mounts.apply_mounts``). A plan
can be printed (``str``) and tested without root or namespaces. The order, as built:

1. ``/`` made private (``MakePrivate``); in a user-namespace run, every mount read-only (``ReadOnlyTree``);
2. every hidden path (outermost first) under an empty read-only tmpfs (``HideFolder``, with the
   folders a run still sees inside it bound back read-only: ``Reveal``), a hidden file under
   ``/dev/null`` (``HideFile``);
3. a fresh tmpfs over ``/tmp``, ``/dev/shm``, ``/var/tmp``, ``/run/lock`` (``PrivateTmpfs``);
4. the folders the run's uid could not traverse and the ones a user-namespace run must not read
   (the grader's home) under an empty tmpfs (``Cover``);
5. what the run needs under 3 and 4 (the checkout, Python) bound back (``BindBack``);
6. the run's working folder (``MakeWorkdir``); the compile cache, bound writable while warming
   (``BindCache``), else a copy-on-write overlay (``OverlayCache``).

An operation that fails where the run would be weaker names its ``Weakening``: the run then
reports it and the grader refuses to start it (``policy.weakened``); any other failure stops the run.
"""

from __future__ import annotations

import os.path
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from course_grader.sandbox.notices import Weakening

PRIVATE_DIRS = ("/tmp", "/dev/shm", "/var/tmp", "/run/lock")   # each gets its own empty tmpfs
PRIVATE_TMP_OPTIONS = "size=1g,mode=1777"
HIDDEN_OPTIONS = "size=64k,mode=555"       # an empty folder nobody may write
COVER_OPTIONS = "size=64k,mode=755"
CACHE_MOUNT = "/tmp/.compile-cache"        # where a run sees the compile cache
CACHE_UPPER, CACHE_WORK = "/tmp/.compile-cache-upper", "/tmp/.compile-cache-work"
WORKDIR = "/tmp/work"                      # a run's cwd and HOME


@dataclass(frozen=True)
class MakePrivate:
    """Mount events no longer propagate between this namespace and the host (``MS_REC | MS_PRIVATE``)."""

    path: str = "/"
    weakens: ClassVar[Weakening | None] = None


@dataclass(frozen=True)
class ReadOnlyTree:
    """Every mount at and below ``path`` read-only (a user-namespace run's uid outside is the grader's)."""

    path: str = "/"
    weakens: ClassVar[Weakening | None] = None


@dataclass(frozen=True)
class Reveal:
    """A folder inside a hidden one that the run still sees, bound read-only from ``source``."""

    target: str
    source: str


@dataclass(frozen=True)
class HideFolder:
    """An empty tmpfs over ``path``, its ``reveal`` folders bound inside, then the whole made read-only."""

    path: str
    reveal: tuple[Reveal, ...] = ()
    options: ClassVar[str] = HIDDEN_OPTIONS
    weakens: ClassVar[Weakening | None] = Weakening.NOT_HIDDEN


@dataclass(frozen=True)
class HideFile:
    """``/dev/null`` bound over a hidden file."""

    path: str
    weakens: ClassVar[Weakening | None] = Weakening.NOT_HIDDEN


@dataclass(frozen=True)
class PrivateTmpfs:
    """A fresh, writable tmpfs of the run's own (it ends with the run)."""

    path: str
    options: ClassVar[str] = PRIVATE_TMP_OPTIONS
    weakens: ClassVar[Weakening | None] = Weakening.NOT_PRIVATE


@dataclass(frozen=True)
class Cover:
    """An empty tmpfs over a folder the run must not read; what it needs inside is bound back after."""

    path: str
    options: ClassVar[str] = COVER_OPTIONS
    weakens: ClassVar[Weakening | None] = Weakening.NOT_COVERED


@dataclass(frozen=True)
class BindBack:
    """A folder the run needs, bound back (recursively, as it was) from a descriptor opened before any cover."""

    path: str
    weakens: ClassVar[Weakening | None] = None


@dataclass(frozen=True)
class MakeWorkdir:
    """The run's cwd and HOME, a folder of its uid on its private /tmp."""

    path: str
    uid: int
    weakens: ClassVar[Weakening | None] = None


@dataclass(frozen=True)
class BindCache:
    """A warming run's compile cache, bound writable; ``open_up``: chmod 777 first (a root run: the
    leased uid must write it; the host seals it again when warming ends); ``clear_read_only``: this
    one mount made writable inside a read-only tree."""

    source: str
    target: str
    open_up: bool
    clear_read_only: bool
    weakens: ClassVar[Weakening | None] = None


@dataclass(frozen=True)
class OverlayCache:
    """The compile cache as a copy-on-write overlay: the run reads it and its writes stay on its /tmp.
    If the overlay fails the run compiles cold (a notice, not a weakening)."""

    source: str
    target: str
    upper: str
    work: str
    uid: int
    weakens: ClassVar[Weakening | None] = None


MountOp = (MakePrivate | ReadOnlyTree | HideFolder | HideFile | PrivateTmpfs | Cover | BindBack | MakeWorkdir
           | BindCache | OverlayCache)


@dataclass(frozen=True)
class MountPlan:
    """The operations of one run's mount table, in the order they are applied."""

    ops: tuple[MountOp, ...]

    def sources(self) -> list[str]:
        """Folders to open before the first operation: what is bound back from under a cover."""
        found: list[str] = []
        for op in self.ops:
            if isinstance(op, HideFolder):
                found += [r.source for r in op.reveal]
            elif isinstance(op, BindBack):
                found.append(op.path)
            elif isinstance(op, BindCache | OverlayCache):
                found.append(op.source)
        return list(dict.fromkeys(found))

    def hidden(self) -> list[str]:
        """The paths this plan hides."""
        return [op.path for op in self.ops if isinstance(op, HideFolder | HideFile)]

    def __str__(self) -> str:
        return "\n".join(map(repr, self.ops))


@dataclass(frozen=True)
class FileFacts:
    """What the planner knows of the file system, read by ``mounts.survey`` (tests write it by hand)."""

    real: Mapping[str, str] = field(default_factory=dict)   # path -> its real path (os.path.realpath)
    present: frozenset[str] = frozenset()       # paths that exist (a dangling link counts)
    folders: frozenset[str] = frozenset()       # real paths that are folders
    links: frozenset[str] = frozenset()         # paths that are symbolic links
    untraversable: frozenset[str] = frozenset()  # folders other users may not pass through (no o+x)

    def resolve(self, path: str) -> str:
        return self.real.get(path, path)

    def first_blocked_ancestor(self, path: str) -> str | None:
        """The first proper ancestor of ``path`` (from the root down) that other users cannot traverse."""
        current = "/"
        for part in path.strip("/").split("/")[:-1]:
            current = os.path.join(current, part)
            if current in self.untraversable:
                return current
        return None


def outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without the ones inside another, shortest first (then by name)."""
    out: list[str] = []
    for p in sorted(set(paths), key=lambda p: (len(p), p)):
        if not any(under(p, q) for q in out):
            out.append(p)
    return out


def under(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or inside it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def plan_mounts(hide: Iterable[str], reveal: Mapping[str, str], keep: Iterable[str], compile_cache: str,
                cache_writable: bool, uid: int, read_only: bool = False, cover: Iterable[str] = (),
                facts: FileFacts = FileFacts()) -> MountPlan:
    """The run's mount table, in order (see the module docstring); pure.

    ``keep``: folders that must stay reachable even if a private dir covers them (the course
    checkout and the Python installation). ``reveal``: target -> source, folders inside hidden
    ones that this run still sees, read-only (the measuring child's ``course_grader/harness``).
    ``read_only``: make the whole tree read-only first (a user-namespace run, whose uid outside is
    the grader's own); the private tmpfs mounts and a warming run's compile cache stay writable.
    ``cover``: folders hidden behind an empty tmpfs, with the ``keep`` paths inside them bound back
    (a user-namespace run: the grader's home). ``uid``: the run's uid outside (0: the grader's own).
    """
    ops: list[MountOp] = [MakePrivate()]
    if read_only:
        ops.append(ReadOnlyTree())
    reveals = {facts.resolve(target): source for target, source in reveal.items()}
    kept = outermost(map(facts.resolve, keep))
    # Folders the run's uid could not traverse anyway (e.g. /root holding pyenv's Python) are
    # covered by an empty tmpfs too, and what the run needs under them is bound back.
    blocked = [a for a in map(facts.first_blocked_ancestor, kept) if a] if uid else []
    blocked += [real for real in map(facts.resolve, cover) if real in facts.folders and real != "/"]
    bound_back = [p for p in kept if any(under(p, d) for d in (*PRIVATE_DIRS, *blocked))]

    for path in outermost(facts.resolve(p) for p in hide if p in facts.present):
        if path in facts.folders:
            ops.append(HideFolder(path, tuple(Reveal(target, source) for target, source in reveals.items()
                                              if under(target, path) and target != path)))
        else:
            ops.append(HideFile(path))
    ops += [PrivateTmpfs(folder) for folder in PRIVATE_DIRS if folder in facts.folders and folder not in facts.links]
    ops += [Cover(folder) for folder in outermost(blocked)]
    ops += [BindBack(path) for path in bound_back]
    ops.append(MakeWorkdir(WORKDIR, uid))
    if compile_cache:
        if cache_writable:
            ops.append(BindCache(compile_cache, CACHE_MOUNT, open_up=not read_only, clear_read_only=read_only))
        else:
            ops.append(OverlayCache(compile_cache, CACHE_MOUNT, CACHE_UPPER, CACHE_WORK, uid))
    return MountPlan(tuple(ops))
