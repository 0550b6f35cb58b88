"""The settings of one grading run (``GradeOptions``), typed, each with its description and its one default.

``grade_class(submissions, out, options)`` takes them as one value; ``course grade`` builds it from its
command line, the samples and the benchmarks from their own choices. A new setting is a field here,
with its ``doc`` and its default, and the code that reads it; an option of ``course grade`` that sets
it goes in ``ui/grade.py`` and leaves the default to this module (an option not given is not passed).

Where a run's results go is decided here too: :meth:`GradeOptions.results_for` (OUT of a submissions
folder) and :meth:`GradeOptions.gradebook_in` (the gradebook of OUT).

**Why the default of ``jobs`` is the number of usable cores** (:func:`default_jobs`): every job is one
kernel with one torch thread (``sandbox.limits.TORCH_THREADS``), and every limit a verdict depends on is
CPU time, not wall time, so more jobs never change a verdict, only how soon the class is done; one job a
core keeps each core busy without two kernels sharing one. It is capped so that the jobs' memory limits
together fit in the machine's memory (``sandbox.limits.MEMORY_BYTES`` each): a class of runaway
allocations then fails each of them, not the machine. ``os.sched_getaffinity`` counts the cores this
process may run on (a ``taskset`` or a container's cpuset), which ``os.cpu_count`` does not.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path

from compile_course.paths import SOLUTIONS
from course_grader.intake.load import MAX_FILE_BYTES
from course_grader.results.private import grading_root
from course_grader.sandbox.limits import MEMORY_BYTES, Limits

GRADEBOOK_NAME = "gradebook.sqlite"   # in OUT, unless --gradebook says otherwise


def default_jobs() -> int:
    """Submissions graded at once by default: one a usable core, no more than memory holds at each run's
    limit, at least one (the module docstring says why)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:            # not Linux
        cores = os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return max(1, cores)
    return max(1, min(cores, memory // MEMORY_BYTES))


def _setting(default, doc: str, *, factory: Callable | None = None):
    if factory is not None:
        return field(default_factory=factory, metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class GradeOptions:
    """How to grade a folder of submissions (every field has a default)."""

    gradebook: Path | None = _setting(None, f"the SQLite gradebook (default: OUT/{GRADEBOOK_NAME})")
    solutions: Path = _setting(SOLUTIONS, "the instructor's solution notebooks, with the hidden tests")
    exercise: str | None = _setting(None, "grade only this exercise (its id, ex02, or its name)")
    jobs: int = _setting(None, "submissions graded at once on this machine (default: one a usable core, "
                               "as many as memory holds at each run's limit)", factory=default_jobs)
    limits: Limits = _setting(None, "the sandbox's limits of every run (sandbox.limits)", factory=Limits)
    progress: bool = _setting(True, "show progress bars")
    warm: bool = _setting(True, "grade the model answers first (warm-up), keeping their replies and compile cache")
    max_file_bytes: int = _setting(MAX_FILE_BYTES, "a larger submission file is rejected unread")
    host_factory: Callable | None = _setting(None, "tests only: build the sandbox host (hide, compile_cache, limits)")
    verdict_for: Callable | None = _setting(None, "tests only: (grade, harness) for an exercise")
    title: str | None = _setting(None, "the feedback index's title (default: 'Grades: <folder>')")
    executor: object = _setting(None, "grade on a cluster (pipeline.cluster.DaskExecutor) instead of here")
    unconfined: bool = _setting(False, "grade where runs cannot be confined (students' code runs as the grader)")
    store: Path | None = _setting(None, "where the warm-up is kept between runs (default: cache_store's)")

    @staticmethod
    def results_for(submissions_dir: Path) -> Path:
        """OUT when none is given: ``build/grading/<name of the folder>`` (or ``~/course-grading/<name>``,
        ``private.grading_root``)."""
        return grading_root()[0] / Path(submissions_dir).resolve().name

    def gradebook_in(self, out_dir: Path) -> Path:
        """This run's gradebook: ``gradebook`` if set, else ``OUT/gradebook.sqlite``."""
        return Path(self.gradebook) if self.gradebook else Path(out_dir) / GRADEBOOK_NAME


def describe() -> dict[str, str]:
    """``{setting: description}``, in declaration order."""
    return {f.name: f.metadata["doc"] for f in fields(GradeOptions)}
