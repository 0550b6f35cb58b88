"""Grading v3: an exercise's ``test`` and ``hidden-test`` cells, run in the grader's own process.

For one submission, in the order of the solution notebook: the exercise's setup cells run once in a
fresh namespace; then each test cell's source (from the solution notebook, never the student's
copy) runs there with ``student`` and ``reference`` bound to :class:`course_grader.verdict.remote.RemoteNamespace`
and ``passed`` recording the cell's message. A cell passes when it ends without an exception.

* an ``AssertionError`` (the test's own, or ``ReplyError``/``AnswerError`` from a reply or an answer
  that is not what it should be) fails the cell with its message;
* any other exception fails it too, saying the test could not check the answer: a student's answer
  is never a grader fault. A test that fails on the model answer stops the run at warm-up, so
  an instructor's mistake is still caught, before any student is graded;
* a measuring fault caused by the student's code (CPU, memory, a crash) fails that test with its
  reason; the platform has recorded it and re-runs the submission alone once before it counts. A
  grader fault goes to the platform.
"""

from __future__ import annotations

import threading

from course_grader.harness import child

from .context import GradeContext, TestVerdict
from .remote import RemoteNamespace

HARNESS = "child"
MAX_MESSAGE = 4000
_SETUP_LOCK = threading.Lock()


def _quiet_print(*args, **kwargs) -> None:
    """``print`` inside a test cell at grading: its text is not part of any verdict."""


def setup_namespace(ctx: GradeContext) -> dict:
    # the setup cells print (the version line, for instance); stdout is the process's, so one at a time
    with _SETUP_LOCK:
        return child.setup_namespace(list(ctx.exercise.setup_sources))


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or f"{type(exc).__name__} (the test gives no message)"


def run_test(source: str, test_id: str, namespace: dict, student: RemoteNamespace,
             reference: RemoteNamespace) -> TestVerdict:
    from course_grader.errors import SandboxFault

    said: list[str] = []
    student.test_source = reference.test_source = source
    scope = dict(namespace)
    scope.update(student=student, reference=reference, passed=lambda message: said.append(str(message)),
                 print=_quiet_print)
    try:
        exec(compile(source, f"<test {test_id}>", "exec"), scope)  # noqa: S102 - the instructor's test cell
    except SandboxFault as fault:
        # the student's code used up a limit in a question this test asked: this test fails, the
        # others keep their verdicts (the platform has recorded the fault and re-runs the submission
        # alone once before it counts); a grader fault stops the submission
        from course_grader.status import FaultKind

        kind = FaultKind(fault.kind)
        if not kind.student_fault:
            raise
        return TestVerdict(test_id, False, kind.sentence(fault.detail))
    except AssertionError as exc:
        return TestVerdict(test_id, False, _message(exc)[:MAX_MESSAGE])
    except (RecursionError, MemoryError) as exc:
        return TestVerdict(test_id, False, f"your answer could not be read ({type(exc).__name__}: it is nested "
                                           "too deeply or too large)")
    except Exception as exc:  # noqa: BLE001 - whatever a student's answer makes a test meet fails that test
        return TestVerdict(test_id, False, f"the test could not check your answer: {type(exc).__name__}: "
                                           f"{str(exc)[:300]}")
    return TestVerdict(test_id, True, (said[-1] if said else "passed")[:MAX_MESSAGE])


def grade(ctx: GradeContext) -> list[TestVerdict]:
    """One verdict per graded test cell of the exercise."""
    namespace = setup_namespace(ctx)
    student = RemoteNamespace(ctx, student=True)
    reference = RemoteNamespace(ctx, student=False)
    return [run_test(cell.source, cell.course_id, namespace, student, reference) for cell in ctx.exercise.tests]
