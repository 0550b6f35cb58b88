"""Every status the grader records or passes between its parts, as ``StrEnum``s.

The string values are what the gradebook, the CSV files and the feedback pages
show, so they are part of the output format: change them only with a
``GRADER_VERSION`` bump (see ``course_grader.__init__``).
"""

from __future__ import annotations

from enum import StrEnum


class AttemptStatus(StrEnum):
    """What became of one submitted file."""

    GRADED = "graded"        # verdicts were computed; the score counts
    FLAGGED = "flagged"      # integrity flag: scores 0 until an instructor clears the flag
    REJECTED = "rejected"    # not gradable (not a notebook, wrong exercise, unreadable...): scores 0
    FAULT = "fault"          # the grader failed on it (never the student's fault): not a grade


class TestStatus(StrEnum):
    """The result of one graded test cell."""

    __test__ = False  # not a pytest class

    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not-run"      # the verdict could not be computed (the reason says why)
    VOIDED = "voided"        # it passed, but the attempt is flagged


class CellStatus(StrEnum):
    """How one cell ended in a notebook kernel (feedback only, never a score)."""

    OK = "ok"
    ERROR = "error"          # the cell raised; ``CellResult.error`` holds the text
    TIMEOUT = "timeout"      # CPU limit (or the wall-clock backstop) reached
    DIED = "died"            # the kernel process ended (memory, os._exit, a signal...)
    NOT_RUN = "not-run"      # an earlier cell ended the kernel


class WordedEnum(StrEnum):
    """A state stored by its value that also carries one sentence (``wording``): members are written
    ``NAME = "value", "wording"``."""

    def __new__(cls, value: str, wording: str) -> WordedEnum:
        member = str.__new__(cls, value)
        member._value_ = value
        member.wording = wording
        return member


FAULT_DETAIL_CHARS = 300   # of a fault's detail, as quoted in a reason or a note


class FaultKind(WordedEnum):
    """Why a sandboxed run did not produce an answer (``SandboxFault.kind``).

    Every kind except ``GRADER`` is the student's code using up a limit or
    ending its own process; ``GRADER`` is the grader failing, which must never
    cost the student a point. Each kind carries its one wording (``wording``):
    what "your code" did, from which :meth:`sentence` builds every message about the fault.
    """

    CPU_TIME = "cpu-time", "used up its CPU time"
    # the wall-clock backstop: the code waited (sleep, blocking read) without using CPU
    WALL_TIME = "wall-time", "ran past the wall-clock limit without finishing (waiting, not computing)"
    MEMORY = "memory", "ran out of memory"
    PIDS = "pids", "started more processes or threads than allowed"
    OUTPUT = "output", "printed more than the output limit"
    # the student's code ended the process (os._exit, a signal, a segfault)
    CRASHED = "crashed", "ended its own process"
    # the child replied with something that is not a well-formed answer
    PROTOCOL = "protocol", "made the measuring process reply with something that is not data"
    GRADER = "grader", "met a failure of the grader (not your fault)"

    @property
    def student_fault(self) -> bool:
        return self is not FaultKind.GRADER

    def sentence(self, detail: object = "", *, who: str = "your code", during: str = "",
                 confirmed: bool = False) -> str:
        """The one sentence about a fault of this kind, which every message about it is: ``who`` did
        ``wording``, ``during`` what, the ``detail`` (the limit's figure and where, at most
        ``FAULT_DETAIL_CHARS``), and whether a second run alone ``confirmed`` it. A grader fault is said
        as the grader's, never the student's. ``CPU_TIME.sentence("1 s of CPU in cell ex01-rewrite")`` is
        "your code used up its CPU time: 1 s of CPU in cell ex01-rewrite"."""
        detail = str(detail or "")[:FAULT_DETAIL_CHARS]
        during = f" while {during}" if during else ""
        if self is FaultKind.GRADER:
            return f"the grader failed{during}{f' ({detail})' if detail else ''}; this is not your fault"
        return (f"{who} {self.wording}{during}{f': {detail}' if detail else ''}"
                f"{' (confirmed by a second run, alone)' if confirmed else ''}")


class CellRole(StrEnum):
    """Whose a cell of the feedback notebook is (``intake.cells.RunCell.role``)."""

    LOCKED = "locked"        # the instructor's code, restored from solutions/
    SOLUTION = "solution"    # a solution cell, as the student wrote it
    STUDENT = "student"      # a cell the student added

    @property
    def students(self) -> bool:
        """The student's code: its errors and CPU time are the student's."""
        return self is not CellRole.LOCKED


class Severity(StrEnum):
    """What an integrity finding does to the attempt (``intake.cells.Finding.severity``)."""

    FLAG = "flag"            # the attempt scores 0 until an instructor clears the flag
    NOTICE = "notice"        # shown to the student and the instructor; no effect on the score


class Confinement(StrEnum):
    """How this machine confines a sandboxed run (``sandbox.policy.confinement_mode``)."""

    ROOT = "root"            # the grader is root: a uid of its own per run, namespaces, a cgroup
    USERNS = "userns"        # not root, user namespaces work: namespaces, the grader's uid outside
    NONE = "none"            # neither: runs keep the grader's uid (only with --unconfined)
