"""The grader's side of the sandbox: ``GradingHost``, the resources of one grading run.

One ``GradingHost`` per ``course grade`` run. It leases a block of uids (``uids.py``),
finds this host's cgroups (``cgroups.py``) and uses the process's fork server
(``template_client.py`` talks to ``template.py``), started by the first host of the process.
Every notebook kernel (``notebook_client.py``) and every measuring request
(``measure_client.py``) is a fresh run (``run.py``, which watches it from outside) forked from
that template, in its own PID, mount and network namespace and its own cgroup, under its own
uid. What every run hides and how this machine confines runs: ``policy.py``.

A fault the student's code caused comes back as data (``CellResult.fault``, or
``SandboxFault`` with a student kind from ``measure``); a grader failure always raises
``SandboxFault(FaultKind.GRADER, ...)`` so that it never costs a point.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import threading
from pathlib import Path

from course_grader.sandbox.cgroups import RUN_PREFIX, CgroupPlan, sweep_stale
from course_grader.sandbox.limits import Limits
from course_grader.sandbox.measure_client import MeasureSession
from course_grader.sandbox.notebook_client import NotebookKernel
from course_grader.sandbox.policy import confinement_mode, default_hidden, harness_dir
from course_grader.sandbox.run import megabytes
from course_grader.sandbox.template_client import SharedTemplate, Template
from course_grader.sandbox.uids import UidLease
from course_grader.status import Confinement

USERNS_NOTICE = ("not root: each run is confined in user namespaces (a read-only file system, hidden folders and "
                 "your home covered, private /tmp, no network, no capabilities, a seccomp filter); this user has no "
                 "cgroup, so the grader reads the run's process tree: its CPU and its memory (all its processes and "
                 "its private /tmp together, {memory}) are capped there, with RLIMIT_CPU and RLIMIT_AS as second "
                 "lines; its processes and threads ({processes}) by the run's reaper, which answers each new one "
                 "(a seccomp user notification), with RLIMIT_NPROC as a second line; the PID namespace ends "
                 "everything with the run")


class GradingHost:
    """Sandbox resources for one grading run; a context manager (see the module docstring)."""

    def __init__(self, hide: list[Path] | None = None, compile_cache: Path | None = None,
                 limits: Limits | None = None, harness_source: Path | None = None):
        """``harness_source``: the folder measuring children see as ``course_grader/harness``
        (default: the real one; tests give a folder of probe harnesses)."""
        self.limits = limits or Limits()
        self.harness_source = Path(harness_source or harness_dir()).resolve()
        self.hide = list(dict.fromkeys([*default_hidden(), *(Path(p) for p in hide or [])]))
        self.compile_cache = Path(compile_cache).resolve() if compile_cache else None
        self.is_warming = False
        self.uids: UidLease | None = None
        self.template: Template | None = None
        self.plan = CgroupPlan()
        self.notices: list[str] = []
        self.confinement = Confinement.ROOT
        self.cover: list[Path] = []
        self._names = itertools.count()
        self._lock = threading.Lock()

    def __enter__(self) -> GradingHost:
        try:
            self.confinement = confinement_mode()
            if self.confinement is Confinement.ROOT:
                self.uids = UidLease()
                self.plan = CgroupPlan.detect()
                sweep_stale(self.plan, self.uids.block)
                self.notices += self.plan.notices
            elif self.confinement is Confinement.USERNS:
                # A run's uid outside is the grader's own: its home (other classes' gradebooks, hand-back
                # folders, keys...) is covered; the checkout and Python, if they live there, are bound back.
                self.cover = [Path(pwd.getpwuid(os.getuid()).pw_dir)]
                self.notices.append(USERNS_NOTICE.format(processes=self.limits.pids,
                                                         memory=megabytes(self.limits.memory_bytes)))
            else:
                self.notices.append("unconfined: runs keep the grader's uid and have no namespaces or cgroups")
            if self.compile_cache:
                self.compile_cache.mkdir(parents=True, exist_ok=True)
                self._seal_cache()
            self.ensure_template()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.template = None      # the process's template outlives the host (``SharedTemplate``)
        if self.uids:
            self.uids.close()

    @property
    def uid_block(self) -> range:
        return range(self.uids.first, self.uids.first + 32) if self.uids else range(0)

    def ensure_template(self) -> Template:
        """The process's running template; restarted if it died (a grader fault for the run that saw it)."""
        with self._lock:
            self.template = SharedTemplate.get()
            self.notices += [n for n in self.template.notices if n not in self.notices]
            return self.template

    def next_cgroup_name(self) -> str:
        with self._lock:
            block = self.uids.block if self.uids else os.getpid()
            return f"{RUN_PREFIX}{block}-{os.getpid()}-{next(self._names)}"

    def notebook_kernel(self, limits: Limits | None = None) -> NotebookKernel:
        """A fresh kernel (use it as a context manager); ``limits`` overrides the host's for this one."""
        return NotebookKernel(self, limits)

    def measure(self, harness: str, entry: str, payload: dict) -> dict:
        """``course_grader.harness.<harness>.<entry>(payload)`` in a fresh measuring child."""
        with self.session() as session:
            return session.measure(harness, entry, payload)

    def session(self) -> MeasureSession:
        """A measuring child kept for several requests, one after the other (a context manager)."""
        return MeasureSession(self)

    @contextlib.contextmanager
    def warming(self):
        """Runs started inside may write the compile cache; afterwards they see a private copy-on-write view."""
        if self.compile_cache is None:
            raise ValueError("this GradingHost has no compile cache to warm")
        self.is_warming = True
        try:
            yield self
        finally:
            self.is_warming = False
            self._seal_cache()

    def _seal_cache(self) -> None:
        """Only the grader's user (root, or the instructor without root) may enter the cache folder on
        the host (a root warming run opens it, world-writable, while it lasts). Runs do not need more:
        their overlay's root belongs to their own uid, and the entries inside were written
        world-writable (umask 0) so that any run can copy them up."""
        if self.compile_cache is not None and self.compile_cache.stat().st_uid == os.geteuid():
            os.chmod(self.compile_cache, 0o700)
