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


class FaultKind(StrEnum):
    """Why a sandboxed run did not produce an answer (``SandboxFault.kind``).

    Every kind except ``GRADER`` is the student's code using up a limit or
    ending its own process; ``GRADER`` is the grader failing, which must never
    cost the student a point.
    """

    CPU_TIME = "cpu-time"
    WALL_TIME = "wall-time"  # the wall-clock backstop: the code waited (sleep, blocking read) without using CPU
    MEMORY = "memory"
    PIDS = "pids"
    OUTPUT = "output"
    CRASHED = "crashed"      # the student's code ended the process (os._exit, a signal, a segfault)
    PROTOCOL = "protocol"    # the child replied with something that is not a well-formed answer
    GRADER = "grader"

    @property
    def student_fault(self) -> bool:
        return self is not FaultKind.GRADER
