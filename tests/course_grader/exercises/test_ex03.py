"""ex03: predictions are literals compared with a CompileCounter the grader runs; warm_up is measured."""

from __future__ import annotations

import pytest

from course_grader.context import GradeContext
from course_grader.exercises import ex03
from course_grader.sandbox import SandboxFault
from course_grader.status import FaultKind

RIGHT_A = "PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 1]"
RIGHT_B = "PREDICTED_B = [1, 0, 1, 0, 0, 1]"
WARM = "def warm_up(compiled_h):\n    x = torch.randn(4, 8)\n    torch._dynamo.mark_dynamic(x, 0)\n    compiled_h(x)\n"


def cells(a=RIGHT_A, b=RIGHT_B, warm=WARM):
    return {"ex03-predict-a": a, "ex03-predict-b": b, "ex03-warm-up": warm}


def test_model_answer_passes(grade_with, model_cells):
    verdicts = grade_with("ex03", model_cells("ex03"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize("a, wrong_call", [
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 0]", "call 8"),   # forgets 0/1 specialisation
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 0, 1]", "call 7"),   # forgets the grad-mode guard
    ("PREDICTED_A = [1, 0, 1, 1, 1, 1, 1, 1]", "call 4"),   # forgets automatic dynamic
])
def test_the_lessons_guards_are_graded(grade_with, a, wrong_call):
    verdicts = grade_with("ex03", cells(a=a))
    assert not verdicts["ex03-test-a"].passed and wrong_call in verdicts["ex03-test-a"].message
    assert verdicts["ex03-hidden-b"].passed and verdicts["ex03-test-warm-up"].passed


@pytest.mark.parametrize("warm, phrase", [
    ("def warm_up(compiled_h):\n    compiled_h(torch.randn(4, 8))\n", "would recompile"),
    ("def warm_up(compiled_h):\n    for n in range(2, 8):\n"
     "        compiled_h(torch.randn(n, 8, dtype=torch.float64 if n % 2 else torch.float32))\n",
     "at most 2"),
    ("def warm_up(compiled_h):\n    pass\n", "nothing was compiled"),
    ("def warm_up(compiled_h):\n    torch._dynamo.reset()\n", "attributes starting with `_`"),
    ("def warm_up(compiled_h):\n    raise ValueError('no')\n", "raised ValueError"),
])
def test_warm_ups_that_do_not_do_the_job_fail(grade_with, warm, phrase):
    verdict = grade_with("ex03", cells(warm=warm))["ex03-test-warm-up"]
    assert not verdict.passed and phrase in verdict.message, verdict.message


def test_predictions_must_be_literal_lists(grade_with):
    verdicts = grade_with("ex03", cells(a="PREDICTED_A = [1] * 8", b="PREDICTED_B = (1, 0, 1, 0, 0, 1)"))
    assert not verdicts["ex03-test-a"].passed and "literal" in verdicts["ex03-test-a"].message
    assert verdicts["ex03-hidden-b"].passed   # a tuple literal is still a literal


@pytest.mark.parametrize("kind", ["wall-time", "cpu-time", "crashed"])
def test_a_warm_up_that_hangs_fails_alone_and_the_predictions_keep_their_verdicts(exercises, fake_measure, kind):
    # Seen in a held-out corpus: right predictions, and a warm_up that waits forever on a Future.
    real = fake_measure(ex03.HARNESS)

    def measure(entry, payload):
        if entry == "warm_up":
            raise SandboxFault(FaultKind(kind), "the student's warm_up did not finish")
        return real(entry, payload)

    verdicts = {v.test_id: v for v in ex03.grade(GradeContext(exercises["ex03"], cells(), measure))}
    assert verdicts["ex03-test-a"].passed and verdicts["ex03-hidden-b"].passed
    assert not verdicts["ex03-test-warm-up"].passed and kind in verdicts["ex03-test-warm-up"].message


def test_a_grader_fault_while_measuring_the_warm_up_is_not_the_students(exercises, fake_measure):
    real = fake_measure(ex03.HARNESS)

    def measure(entry, payload):
        if entry == "warm_up":
            raise SandboxFault(FaultKind.GRADER, "the template died")
        return real(entry, payload)

    with pytest.raises(SandboxFault):
        ex03.grade(GradeContext(exercises["ex03"], cells(), measure))
