"""Every exception of the course's tooling, in one tree (the grader's are ``course_grader.errors``, the
exchange's ``course_exchange.errors``).

    CourseToolsError
    ├── ResolveError          pip finds no versions of requirements.txt's packages for one Python (``lock``)
    └── InterpreterRefused    the interpreter given to ``course drift --python`` is one the set-up refuses
"""

from __future__ import annotations


class CourseToolsError(Exception):
    """Anything the course's tooling raises of its own."""


class ResolveError(CourseToolsError, RuntimeError):
    """pip found no versions of requirements.txt's packages (and the lock's) for one Python."""

    def __init__(self, target: str, said: str):
        super().__init__(f"pip cannot resolve requirements.txt for Python {target}:\n{said}")
        self.target = target


class InterpreterRefused(CourseToolsError, RuntimeError):
    """The interpreter given with ``--python`` is one the set-up would refuse; the message says why."""
