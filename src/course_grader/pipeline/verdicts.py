"""Verdict collection: an exercise's test cells run on one submission, one ``TestResult`` per graded test.

:func:`collect` runs the exercise's verdict code (``verdict.testcells.grade`` on a ``GradeContext``) in
this, the trusted, process; what it asks of the student's code goes to measuring children through a
``Measurer``. It checks what the verdict code returns (every test id once, bools and strings), keeps
of a hidden test only its id, points and pass/fail, and returns the measuring faults beside the
results (``Verdicts``). ``fault_reason`` words those faults for the student (``FaultReason``): a grader
failure is never a grade.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from course_grader.errors import GraderError
from course_grader.exercise.model import Exercise
from course_grader.intake.cells import Checked
from course_grader.pipeline.replies import Measurer, MeasuringFault, ReplyCache
from course_grader.results.attempt import TestResult
from course_grader.status import FaultKind, TestStatus

MESSAGE_CHARS = 4000


@dataclass
class Verdicts:
    """One submission's verdicts: a ``TestResult`` per graded test, in the exercise's order, the faults of
    the measuring requests behind them (a first run with any is graded again, alone), and the seconds spent
    measuring."""

    tests: list[TestResult] = field(default_factory=list)
    faults: list[MeasuringFault] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class FaultReason:
    """What the faults of a submission's final run mean: whose fault, and the sentence the student reads."""

    grader_fault: bool       # the grader failed: the attempt is a FAULT, never recorded as a grade
    text: str


def verdict_module(ex: Exercise):
    """``(grade, harness)`` for an exercise: its own test cells, run by ``course_grader.verdict.testcells``."""
    from course_grader.verdict import testcells

    return testcells.grade, testcells.HARNESS


def _all(ex: Exercise, status: TestStatus, reason: str) -> list[TestResult]:
    return [TestResult(t.course_id, t.hidden, t.points, status, "" if t.hidden else reason) for t in ex.tests]


def collect(ex: Exercise, checked: Checked, host, verdict_for, cache: ReplyCache | None = None) -> Verdicts:
    """One ``TestResult`` per graded test cell, in the exercise's order; plus the measuring faults.

    Raises ``GraderError`` when the exercise's verdict code misbehaves (missing or unknown test ids,
    wrong types, an exception of its own)."""
    if not ex.tests:
        return Verdicts()
    try:
        grade, harness = verdict_for(ex)
    except Exception as exc:  # noqa: BLE001 - missing or broken verdict code is the grader's fault
        raise GraderError(f"{ex.id} has no usable verdict code: {type(exc).__name__}: {str(exc)[:300]}") from exc
    measurer = Measurer(host, harness, cache)
    from course_grader.errors import SandboxFault
    from course_grader.verdict.context import AnswerError, GradeContext

    context = GradeContext(ex, dict(checked.cells), measurer)

    try:
        got = grade(context)
    except SandboxFault as fault:
        # the verdict code let a measuring fault through: every test of the submission waits on it
        if not measurer.faults:
            measurer.faults.append(MeasuringFault("grade", fault))
        return Verdicts(_all(ex, TestStatus.NOT_RUN, f"not measured: {fault.kind}"), measurer.faults, measurer.seconds)
    except (RecursionError, MemoryError) as exc:  # an answer too deep or too big for the parser: the student's
        reason = f"your answer could not be read ({type(exc).__name__}: it is nested too deeply or too large)"
        return Verdicts(_all(ex, TestStatus.FAILED, reason), measurer.faults, measurer.seconds)
    except AnswerError as exc:  # the verdict code should catch it per test; if not, it fails them all
        return Verdicts(_all(ex, TestStatus.FAILED, str(exc)[:2000]), measurer.faults, measurer.seconds)
    except Exception as exc:  # noqa: BLE001 - the verdict code is the grader's: its failure is a grader fault
        raise GraderError(f"{ex.id} verdict code failed: {type(exc).__name__}: {str(exc)[:300]}") from exc
    finally:
        measurer.close()  # the submission's measuring children end with its verdicts
    by_id: dict[str, Any] = {}
    for v in got or []:
        tid = getattr(v, "test_id", None)
        if not isinstance(tid, str) or tid in by_id:
            raise GraderError(f"{ex.id} verdict code returned a bad or repeated test id {tid!r}")
        if type(getattr(v, "passed", None)) is not bool or not isinstance(getattr(v, "message", ""), str):
            raise GraderError(f"{ex.id} verdict for {tid}: passed must be a bool and message a str")
        by_id[tid] = v
    expected = [t.course_id for t in ex.tests]
    if set(by_id) != set(expected):
        raise GraderError(f"{ex.id} verdict code answered {sorted(by_id)}, the exercise grades {expected}")
    results = []
    for t in ex.tests:
        v = by_id[t.course_id]
        results.append(TestResult(t.course_id, t.hidden, t.points, TestStatus.PASSED if v.passed else TestStatus.FAILED,
                                  "" if t.hidden else (v.message or "")[:MESSAGE_CHARS]))
    return Verdicts(results, measurer.faults, measurer.seconds)


def fault_reason(faults: list[MeasuringFault], retried: bool) -> FaultReason:
    """Whose fault the faults of a submission's final run are, and the reason the student reads."""
    for f in faults:
        if FaultKind(f.fault.kind) is FaultKind.GRADER:
            return FaultReason(True, FaultKind.GRADER.sentence(f.fault.detail, during=f"measuring {f.entry}"))
    first = faults[0]
    return FaultReason(False, FaultKind(first.fault.kind).sentence(
        first.fault.detail, during=f"the grader measured {first.entry}", confirmed=retried))
