"""Every exception of the grader, in one tree: the ways a grading command, a sandboxed run, or a message
between the grader's processes ends without its result.

    CourseGraderError
    ├── GraderError               the run cannot grade at all: exit 1 (unreadable solutions, a model answer
    │   │                         that fails its own tests)
    │   └── GradebookVersionError the gradebook was written by a newer grader
    ├── UsageError                the command asked for what does not exist or cannot be: exit 2, nothing made
    ├── HandinError               a hand-in request (``api``: the exchange's one door into the grader)
    ├── SheetError                a review sheet that cannot be read as a whole
    ├── HandBackError             a hand-back that cannot be written where asked
    ├── PublishError              the student edition cannot be published as asked
    ├── ChangedByHand             a release would overwrite exercise files edited since the last one
    ├── ExerciseFormatError       a solution notebook breaks the format contract (docs/exercise-format.md)
    ├── UnsafePath                a feedback page's path would leave the results folder
    ├── WorkerSetupError          a cluster worker cannot grade at all (the client stops the run)
    ├── SandboxFault              a sandboxed run produced no answer; its ``kind`` (``status.FaultKind``) says
    │                             whose fault and why
    ├── SandboxSetupError         a confinement step cannot be set up: the run must not start without it
    │   ├── ConfineError          a namespace, mount or identity step failed
    │   ├── FilterError           the seccomp filter could not be built or loaded
    │   ├── GateError             the task gate could not be set up, or failed
    │   └── NoUidAvailable        every kernel uid of the pool is leased
    ├── ProtocolError             a message between the grader's processes that the protocol does not allow
    ├── PayloadError              a measuring request or reply not of its message's shape
    └── AllowListError            code not allowed in a measuring process (the text says where and why)

What a student's code does is data, not an exception of the grader (``status.FaultKind``,
``status.TestStatus``); ``SandboxFault`` carries it from the run to the verdict. The student helpers'
``ReplyError`` and ``AnswerError`` (``compile_course.measurement.codec``) are another package's. Each class
keeps the built-in base its callers catch (``ValueError``, ``RuntimeError``). This module imports nothing of
the grader: the measuring child reaches it through ``wire.protocol``, loaded before its mounts hide the grader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from course_grader.status import FaultKind


class CourseGraderError(Exception):
    """Anything the grader raises of its own."""


# ---------------------------------------------------------------- a command ends

class GraderError(CourseGraderError, RuntimeError):
    """The grader cannot grade this run at all (unreadable solutions, a model answer that fails)."""


class GradebookVersionError(GraderError):
    """The gradebook was written by a newer grader (its schema version is higher than this grader's)."""


class UsageError(CourseGraderError, ValueError):
    """The command was asked for something that does not exist or cannot be (an unknown ``--exercise``,
    a path that is no notebook, a bad student id): exit 2, nothing created."""


class HandinError(CourseGraderError, ValueError):
    """A usage problem with a hand-in request (no such exercise, a bad name or id); its text says which."""


class SheetError(CourseGraderError, ValueError):
    """The review sheet as a whole cannot be read (encoding, header): nothing was imported or changed."""


class HandBackError(CourseGraderError, ValueError):
    """The hand-back cannot be written where asked (a folder it did not make, a bad mapping file)."""


class PublishError(CourseGraderError, RuntimeError):
    """The edition cannot be published as asked; nothing was changed (exit 2)."""


class ChangedByHand(CourseGraderError, RuntimeError):
    """A release would overwrite exercise files that were edited after the last release."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        names = ", ".join(str(p) for p in paths)
        super().__init__(
            f"not released: {names} changed since the last release (answers or outputs typed into the "
            "course's own copy?), and a release would overwrite it. Nothing was written. Work in your "
            "workspace instead: `course workspace` (or `make lab`) copies the exercises to work/exercises/; copy "
            "your answers there first. To discard the changes: course release --force")


class ExerciseFormatError(CourseGraderError, ValueError):
    """The solution notebook breaks the format contract (docs/exercise-format.md)."""


class UnsafePath(CourseGraderError, ValueError):
    """A feedback path would not be a plain file inside the output folder."""


class WorkerSetupError(CourseGraderError):
    """This worker cannot grade at all (its sandbox does not start, different grader code, model
    answers short of full marks). The client stops the run: it is not any submission's fault."""


# ---------------------------------------------------------------- a sandboxed run ends

class SandboxFault(CourseGraderError):
    """A run produced no answer. ``kind.student_fault`` says whose fault; ``detail`` is for the student.

    For a student kind, ``detail`` adds to ``kind.wording`` (what "your code" did; ``FaultKind.sentence``
    builds every message from both) only what it does not say: the limit's figure and where, e.g. wording
    "used up its CPU time", detail "10 s of CPU in cell ex01-a". It names its unit, since a cell's
    record shows it on its own."""

    def __init__(self, kind: FaultKind, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail

    def __str__(self) -> str:
        return self.detail


class SandboxSetupError(CourseGraderError):
    """A step of confining a run could not be taken: the run does not start (or go on) without it."""


class ConfineError(SandboxSetupError):
    """A confinement step failed where it must not (the run does not start)."""


class FilterError(SandboxSetupError):
    """The filter could not be built or loaded (the run must not start without it)."""


class GateError(SandboxSetupError):
    """The gate could not be set up, or failed (the run must not start, or go on, without it)."""


class NoUidAvailable(SandboxSetupError):
    """Every uid of the kernel pool is leased by another run (``sandbox.uids``)."""


# ---------------------------------------------------------------- between the grader's processes

class ProtocolError(CourseGraderError):
    """A message that is not what the protocol allows (too long, malformed, wrong nonce)."""


class PayloadError(CourseGraderError, ValueError):
    """A payload or reply that is not the shape its message allows; the text says what is wrong."""


class AllowListError(CourseGraderError, ValueError):
    """The code is not allowed in a measuring process; the text says where and why."""
