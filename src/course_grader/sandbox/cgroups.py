"""One cgroup per run: a memory cap, a pids cap, CPU accounting and a kill switch.

Each resource is taken from the best place this host offers, independently:

* cgroup v2 (the unified hierarchy) when its controller is enabled there: ``memory.max``,
  ``pids.max``; every v2 cgroup also has ``cpu.stat`` (accounting) and ``cgroup.kill``;
* otherwise the v1 hierarchy of that controller (``memory.limit_in_bytes``, ``pids.max``,
  ``cpuacct.usage``);
* otherwise nothing, recorded as a notice: the run then relies on rlimits (RLIMIT_AS for
  memory, RLIMIT_CPU) and on its PID namespace for cleanup.

Run cgroups are created inside the grader's own cgroup of each hierarchy (so they nest
under whatever limits the host already puts on the grader) with a name that carries the
grader's uid lease, so two graders never touch each other's cgroups. Killing a run kills
the members of its own cgroup, never processes found by uid.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_paths() -> dict[str, str]:
    """hierarchy key -> this process's cgroup path in it ("" is the v2 unified hierarchy)."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        num, controllers, path = line.split(":", 2)
        if num == "0":
            paths[""] = path
        for c in controllers.split(","):
            if c:
                paths[c.removeprefix("name=")] = path
    return paths


def _v2_root() -> Path | None:
    for mount in Path("/proc/self/mounts").read_text().splitlines():
        parts = mount.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def _v1_root(controller: str) -> Path | None:
    for mount in Path("/proc/self/mounts").read_text().splitlines():
        parts = mount.split()
        if len(parts) > 3 and parts[2] == "cgroup" and controller in parts[3].split(","):
            return Path(parts[1])
    return None


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


@dataclass
class CgroupPlan:
    """Where each resource is controlled on this host; found once per GradingHost."""

    memory: tuple[str, Path] | None = None     # ("v2"|"v1", parent directory)
    pids: tuple[str, Path] | None = None
    cpu: tuple[str, Path] | None = None        # accounting: v2 cpu.stat or v1 cpuacct.usage
    kill: Path | None = None                   # a v2 parent directory (cgroup.kill)
    notices: list[str] = field(default_factory=list)

    @classmethod
    def detect(cls) -> CgroupPlan:
        plan = cls()
        own = _own_paths()
        v2 = _v2_root()
        v2_parent = v2 / own.get("", "/").lstrip("/") if v2 else None
        v2_ok = v2_parent is not None and _writable_dir(v2_parent) and (v2_parent / "cgroup.procs").exists()
        enabled = set((v2_parent / "cgroup.subtree_control").read_text().split()) if v2_ok else set()
        for resource, v1_name in (("memory", "memory"), ("pids", "pids"), ("cpu", "cpuacct")):
            if v2_ok and (resource in enabled or resource == "cpu"):
                setattr(plan, resource, ("v2", v2_parent))
                continue
            root = _v1_root(v1_name)
            parent = root / own.get(v1_name, "/").lstrip("/") if root else None
            if parent is not None and _writable_dir(parent):
                setattr(plan, resource, ("v1", parent))
            else:
                plan.notices.append(f"no writable {resource} cgroup: "
                                    + {"memory": "memory is capped by RLIMIT_AS only",
                                       "pids": "processes are capped by the run's task gate instead",
                                       "cpu": "CPU is measured per process only"}[resource])
        if v2_ok:  # cgroup.kill exists in non-root v2 cgroups since Linux 5.14; checked per run
            plan.kill = v2_parent
        return plan


RUN_PREFIX = "course-grader-"


def is_stale(name: str, own_block: int, leased=None) -> bool:
    """Whether the run cgroup ``course-grader-BLOCK-PID-N`` belongs to a grader that is gone.

    Judged by the uid block's lease (a flock, the same from every PID namespace), not by the
    pid, which another PID namespace reads differently: the block is free, or it is this
    grader's own block and the name carries another pid (a holder before this one)."""
    from .uids import block_is_leased

    parts = name.split("-")
    if len(parts) != 5 or not parts[2].isdigit() or not parts[3].isdigit():
        return False
    block, pid = int(parts[2]), int(parts[3])
    if block == own_block:
        return pid != os.getpid()
    return not (leased or block_is_leased)(block)


def sweep_stale(plan: CgroupPlan, own_block: int = -1) -> int:
    """Remove empty run cgroups left by a grader that died (:func:`is_stale`).

    Only ``rmdir`` is used: a cgroup that still has members is left alone, and nothing is killed."""
    removed = 0
    parents = ({place[1] for place in (plan.memory, plan.pids, plan.cpu) if place}
               | ({plan.kill} if plan.kill else set()))
    for parent in parents:
        for child in parent.glob(RUN_PREFIX + "*"):
            if not is_stale(child.name, own_block):
                continue
            try:
                child.rmdir()
                removed += 1
            except OSError:
                pass
    return removed


def remove_run_dirs(paths, wait_s: float = 5.0) -> list[str]:
    """Kill every member of the run cgroups ``paths`` and remove them; the ones still there are returned.

    For the template when its grader is gone (killed, crashed): the runs it started may still be
    alive, and nobody else would remove their cgroups until the next grader's :func:`sweep_stale`."""
    left = [Path(p) for p in paths if os.path.isdir(p)]
    for path in left:
        try:
            (path / "cgroup.kill").write_text("1")     # v2; v1 has none: its members are killed below
        except OSError:
            pass
    deadline = time.monotonic() + wait_s
    while left:
        for path in list(left):
            try:
                members = [int(p) for p in (path / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                members = []
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                path.rmdir()
                left.remove(path)
            except FileNotFoundError:
                left.remove(path)
            except OSError:
                pass
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return [str(p) for p in left]


class RunCgroup:
    """The cgroups of one run, created before it starts and removed after it ends."""

    def __init__(self, plan: CgroupPlan, name: str, memory_bytes: int, pids: int):
        self.plan, self.dirs = plan, {}
        wanted = {"memory": plan.memory, "pids": plan.pids, "cpu": plan.cpu}
        if plan.kill is not None:
            wanted["kill"] = ("v2", plan.kill)
        for resource, place in wanted.items():
            if place is None:
                continue
            version, parent = place
            path = parent / name
            if path not in self.dirs.values():
                path.mkdir()
            self.dirs[resource] = path
        if plan.memory:
            version, _ = plan.memory
            path = self.dirs["memory"]
            if version == "v2":
                (path / "memory.max").write_text(str(memory_bytes))
                (path / "memory.swap.max").write_text("0") if (path / "memory.swap.max").exists() else None
            else:
                (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if plan.pids:
            (self.dirs["pids"] / "pids.max").write_text(str(pids))

    @property
    def join_paths(self) -> list[str]:
        """The directories a run's first process writes its pid into (each hierarchy once)."""
        return sorted({str(p) for p in self.dirs.values()})

    def _read(self, resource: str, filename: str) -> str:
        try:
            return (self.dirs[resource] / filename).read_text()
        except (KeyError, OSError):
            return ""

    @staticmethod
    def _field(text: str, key: str) -> int:
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
        return 0

    def cpu_s(self) -> float | None:
        """CPU seconds used by every process of the run so far; None without accounting."""
        if not self.plan.cpu:
            return None
        if self.plan.cpu[0] == "v2":
            return self._field(self._read("cpu", "cpu.stat"), "usage_usec") / 1e6
        text = self._read("cpu", "cpuacct.usage").strip()
        return int(text) / 1e9 if text else None

    def oom_kills(self) -> int:
        if not self.plan.memory:
            return 0
        name = "memory.events" if self.plan.memory[0] == "v2" else "memory.oom_control"
        return self._field(self._read("memory", name), "oom_kill")

    def pids_refused(self) -> int:
        """How many forks or thread creations the pids cap refused."""
        return self._field(self._read("pids", "pids.events"), "max") if self.plan.pids else 0

    def members(self) -> set[int]:
        pids: set[int] = set()
        for path in self.dirs.values():
            try:
                pids |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return pids

    def kill(self) -> None:
        """SIGKILL every process of this run's cgroups (and only those)."""
        if "kill" in self.dirs and (self.dirs["kill"] / "cgroup.kill").exists():
            try:
                (self.dirs["kill"] / "cgroup.kill").write_text("1")
            except OSError:
                pass
        for _ in range(3):  # a process may fork between reading the list and the kill
            members = self.members()
            if not members:
                return
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def remove(self, wait_s: float = 5.0) -> None:
        """Kill what is left, then remove the directories (rmdir waits for the last exit)."""
        self.kill()
        deadline = time.monotonic() + wait_s
        for path in sorted(set(self.dirs.values()), key=str):
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    self.kill()
                    time.sleep(0.02)
