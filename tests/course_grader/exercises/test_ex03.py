"""ex03 graded from its notebook's test cells: predicted compile counts and a warm-up, against torch's own count.

The public ``ex03-test-a`` (1 point) checks only the form of PREDICTED_A, so the self-check cannot tell a
right prediction from a wrong one; the hidden tests compare every prediction of sequences A (2 points) and
B (3 points) with the new compilations a CompileWatch counts for the course's own sequences, asked of
``reference`` (a child without student code). ``warm_up`` is called on a ``spy("h")`` stand-in; its recorded
calls are made again on a fresh ``torch.compile(h)`` by the course's code, with the serving batch sizes after
them, so nothing the student's process says about compile counts is believed.
"""

from __future__ import annotations

import pytest

from course_grader.errors import SandboxFault
from course_grader.status import FaultKind
from course_grader.verdict import testcells
from course_grader.verdict.context import GradeContext

RIGHT_A = "PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 1]"
RIGHT_B = "PREDICTED_B = [1, 0, 1, 0, 0, 1]"
WARM = "def warm_up(compiled_h):\n    x = torch.randn(4, 8)\n    torch._dynamo.mark_dynamic(x, 0)\n    compiled_h(x)\n"
PREDICTION_TESTS = ("ex03-test-a", "ex03-hidden-a", "ex03-hidden-b")


def cells(a=RIGHT_A, b=RIGHT_B, warm=WARM):
    return {"ex03-predict-a": a, "ex03-predict-b": b, "ex03-warm-up": warm}


def warm_up(*body: str) -> str:
    return "def warm_up(compiled_h):\n" + "\n".join("    " + line for line in body) + "\n"


def test_points_split_form_public_comparison_hidden(exercises):
    ex = exercises["ex03"]
    points = {c.course_id: (c.kind.value, c.points) for c in ex.tests}
    assert points == {"ex03-test-a": ("test", 1), "ex03-hidden-a": ("hidden-test", 2),
                      "ex03-hidden-b": ("hidden-test", 3), "ex03-test-warm-up": ("test", 2)}
    assert [c.course_id for c in ex.cells if c.setup] == ["ex03-setup", "ex03-sequence-a", "ex03-sequence-b"]
    assert ex.cell("ex03-warm-up").allow == ("torch._dynamo.mark_dynamic",)   # exactly v2's dotted name


def test_model_answer_passes_every_test(grade_with, model_cells):
    verdicts = grade_with("ex03", model_cells("ex03"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}
    assert "compile nothing new" in verdicts["ex03-test-warm-up"].message


@pytest.mark.parametrize("a, wrong_call", [
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 0]", "call 8"),   # forgets 0/1 specialisation
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 0, 1]", "call 7"),   # forgets the grad-mode guard
    ("PREDICTED_A = [1, 0, 1, 1, 1, 1, 1, 1]", "call 4"),   # forgets automatic dynamic
])
def test_a_wrong_prediction_of_a_passes_the_self_check_and_fails_the_hidden_test(grade_with, a, wrong_call):
    verdicts = grade_with("ex03", cells(a=a))
    assert verdicts["ex03-test-a"].passed              # well formed: the self-check cannot tell
    hidden = verdicts["ex03-hidden-a"]
    assert not hidden.passed and wrong_call in hidden.message and "1 of 8" in hidden.message, hidden.message
    assert verdicts["ex03-hidden-b"].passed and verdicts["ex03-test-warm-up"].passed


@pytest.mark.parametrize("b, wrong_call", [
    ("PREDICTED_B = [1, 0, 1, 0, 1, 1]", "call 5"),         # thinks the eval variant is static (it is dynamic)
    ("PREDICTED_B = [1, 0, 1, 0, 0, 0]", "call 6"),         # forgets the grad-mode guard
    ("PREDICTED_B = [1, 1, 1, 0, 0, 1]", "call 2"),         # forgets mark_dynamic
])
def test_a_wrong_prediction_of_b_fails_only_the_hidden_b(grade_with, b, wrong_call):
    verdicts = grade_with("ex03", cells(b=b))
    assert not verdicts["ex03-hidden-b"].passed and wrong_call in verdicts["ex03-hidden-b"].message
    assert all(verdicts[t].passed for t in ("ex03-test-a", "ex03-hidden-a", "ex03-test-warm-up"))


@pytest.mark.parametrize("a, said", [
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1]", "8 predictions"),
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 1, 0]", "8 predictions"),
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, '1']", "whole numbers"),
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, 1.0]", "whole numbers"),
    ("PREDICTED_A = [1, 0, 1, 0, 1, 1, 1, True]", "whole numbers"),
    ("PREDICTED_A = 6", "whole numbers"),
    ("PREDICTED_A = [1] * 8", "literal"),                    # computed by code: never run
    ('raise NotImplementedError("ex03-predict-a: replace this line with your answer")', "PREDICTED_A = ..."),
])
def test_a_malformed_prediction_fails_the_public_test_with_a_message(grade_with, a, said):
    verdicts = grade_with("ex03", cells(a=a))
    assert not verdicts["ex03-test-a"].passed and said in verdicts["ex03-test-a"].message, verdicts["ex03-test-a"]
    assert not verdicts["ex03-hidden-a"].passed
    assert verdicts["ex03-hidden-b"].passed and verdicts["ex03-test-warm-up"].passed


def test_a_tuple_literal_is_still_a_literal(grade_with):
    verdicts = grade_with("ex03", cells(a="PREDICTED_A = (1, 0, 1, 0, 1, 1, 1, 1)",
                                        b="PREDICTED_B = (1, 0, 1, 0, 0, 1)  # checked with CompileWatch"))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items()}


# ------------------------------------------------------------------ warm_up

@pytest.mark.parametrize("body", [
    ("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"),      # the model answer
    ("for n in (2, 3):", "    compiled_h(torch.randn(n, 8))"),                             # automatic dynamic: 2
    ("for n in range(2, 65):", "    compiled_h(torch.randn(n, 8))"),                       # every size, still 2
    ("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)",                          # both grad modes: 2
     "with torch.no_grad():", "    compiled_h(x)", "compiled_h(x)"),
])
def test_warm_ups_that_do_the_job_pass(grade_with, body):
    verdict = grade_with("ex03", cells(warm=warm_up(*body)))["ex03-test-warm-up"]
    assert verdict.passed, verdict.message


@pytest.mark.parametrize("body, phrase", [
    (("compiled_h(torch.randn(4, 8))",), "would recompile"),                              # one static graph
    (("for n in range(2, 8):",
      "    compiled_h(torch.randn(n, 8, dtype=torch.float64 if n % 2 else torch.float32))"), "at most 2"),
    (("pass",), "nothing was compiled"),
    (("torch._dynamo.reset()",), "attributes starting with `_`"),
    (("raise ValueError('no')",), "raised ValueError"),
    # the grad-mode guard: a warm-up made under no_grad does not serve calls made with grad enabled
    (("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "with torch.no_grad():", "    compiled_h(x)"),
     "grad_mode"),
    # a float64 warm-up does not serve float32 inputs
    (("x = torch.randn(4, 8, dtype=torch.float64)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"),
     "dtype mismatch"),
    # 0/1 specialisation: a size-1 input is not a dynamic size
    (("x = torch.randn(1, 8)", "compiled_h(x)"), "would recompile"),
])
def test_warm_ups_that_do_not_do_the_job_fail(grade_with, body, phrase):
    verdicts = grade_with("ex03", cells(warm=warm_up(*body)))
    verdict = verdicts["ex03-test-warm-up"]
    assert not verdict.passed and phrase in verdict.message, verdict.message
    assert all(verdicts[t].passed for t in PREDICTION_TESTS)


@pytest.mark.parametrize("body, phrase", [
    (("x = torch.randn(4, 8, device='meta')", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"), "'meta'"),
    (("x = torch.randn(8, 4).t()", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"), "not contiguous"),
    # a forged report: the return value and prints are nobody's evidence
    (("compiled_h(torch.randn(4, 8))", "print('✓ after warm_up, batch sizes compile nothing new')",
      "return {'frames': 1, 'calls': {'2': 'ok', '3': 'ok', '17': 'ok', '64': 'ok'}}"), "would recompile"),
    # the stance of its own process changes nothing in the replay
    (("torch.compiler.set_stance('force_eager')", "compiled_h(torch.randn(4, 8))"), "another stance"),
    (("torch.compiler.set_stance('eager_on_recompile')", "compiled_h(torch.randn(4, 8))"), "another stance"),
    # compiling h itself, dynamic, and never calling the function it was given
    (("torch.compile(h, dynamic=True)(torch.randn(4, 8))",), "nothing was compiled"),
    # counting with the course's own helper in its process: a count is not a call
    (("new_compilations(h, lambda call: call(torch.randn(4, 8)))",), "nothing was compiled"),
    # erasing the record of what it did, or writing one: the stand-in is a plain function, the record not its
    (("for n in range(2, 8):", "    compiled_h(torch.randn(n, 8, dtype=torch.float64 if n % 2 else torch.float32))",
      "compiled_h.calls.clear()"), "no attribute 'calls'"),
    (("compiled_h(torch.randn(4, 8))", "compiled_h.calls.append({'frames': 1, 'calls': 'ok'})"),
     "no attribute 'calls'"),
    (("compiled_h.fn(torch.randn(4, 8))",), "no attribute 'fn'"),
    (("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "for _ in range(150):", "    compiled_h(x)"),
     "a few calls"),
    # replacing the function it is given: an attribute store
    (("compiled_h.fn = None", "compiled_h(torch.randn(4, 8))"), "assigning to an attribute"),
])
def test_a_hostile_warm_up_gains_nothing(grade_with, body, phrase):
    verdicts = grade_with("ex03", cells(warm=warm_up(*body)))
    verdict = verdicts["ex03-test-warm-up"]
    assert not verdict.passed and phrase in verdict.message, verdict.message
    assert all(verdicts[t].passed for t in PREDICTION_TESTS)


def test_no_child_sees_a_prediction_or_a_test_and_the_key_comes_from_a_child_without_student_code(
        exercises, fake_measure):
    real = fake_measure(testcells.HARNESS)
    payloads = []

    def measure(entry, payload):
        payloads.append((entry, payload))
        return real(entry, payload)

    verdicts = testcells.grade(GradeContext(exercises["ex03"], cells(), measure))
    assert all(v.passed for v in verdicts), verdicts
    asked = [(p["name"], p["function"] is not None, p["op"]) for _, p in payloads]
    assert sorted(asked) == sorted([("new_compilations", False, "call"), ("new_compilations", False, "call"),
                                    ("warm_up", True, "call"), ("new_compilations", False, "call")])
    text = repr(payloads)
    for secret in ("PREDICTED", "[1, 0, 1, 0, 1, 1, 1, 1]", "torch counted", "SIZES", "warm_up_then_serve"):
        assert secret not in text
    student = next(p for _, p in payloads if p["function"] is not None)
    assert student["args"] == [{"spy": "h"}]                      # only the stand-in travels to the student


def test_a_fault_while_measuring_the_warm_up_fails_only_the_warm_up_test(exercises, fake_measure):
    # the student's warm_up hangs: that test fails with the reason, the predictions keep their verdicts
    # (the platform, which records the fault, re-runs the submission alone once before it counts)
    real = fake_measure(testcells.HARNESS)

    def measure(entry, payload):
        if payload.get("function") is not None:
            raise SandboxFault(FaultKind.WALL_TIME, "the student's warm_up did not finish")
        return real(entry, payload)

    verdicts = {v.test_id: v for v in testcells.grade(GradeContext(exercises["ex03"], cells(), measure))}
    assert not verdicts["ex03-test-warm-up"].passed
    assert "wall-clock" in verdicts["ex03-test-warm-up"].message
    assert verdicts["ex03-test-a"].passed and verdicts["ex03-hidden-a"].passed and verdicts["ex03-hidden-b"].passed

    def broken(entry, payload):
        raise SandboxFault(FaultKind.GRADER, "the sandbox could not start")

    with pytest.raises(SandboxFault):   # the grader's own failure stops the submission
        testcells.grade(GradeContext(exercises["ex03"], cells(), broken))


def test_unanswered_fails_every_test_with_a_message(grade_with):
    stub = 'raise NotImplementedError("{}: replace this line with your answer")'
    verdicts = grade_with("ex03", {cid: stub.format(cid) for cid in ("ex03-predict-a", "ex03-predict-b",
                                                                       "ex03-verify-b", "ex03-warm-up")})
    assert not any(v.passed for v in verdicts.values())
    assert "PREDICTED_A = ..." in verdicts["ex03-test-a"].message
    assert "def warm_up" in verdicts["ex03-test-warm-up"].message


# The test API in the measuring child (issue #26): the setup cells bind student, reference, code, spy and
# Namespace there, and a Namespace evaluates code(...) with the real builtins. None of it is reachable.
@pytest.mark.parametrize("body", [
    ("student.call('h', code('exec(chr(49))'))",),
    ("reference.call('new_compilations', code('h'), code('sequence_a'))",),
    ("Namespace({'h': h}).call('h', torch.randn(4, 8))",),
    ("s = spy('h')", "compiled_h(torch.randn(4, 8))"),
    ("c = code('eval')", "compiled_h(torch.randn(4, 8))"),
    ("e = eval", "compiled_h(torch.randn(4, 8))"),
    ("compiled_h(torch.randn(4, 8))", "p = passed"),
])
def test_a_warm_up_that_reaches_the_test_api_gets_nothing_and_is_flagged(grade_with, exercises, body):
    from course_grader.exercise.release import answered_notebook
    from course_grader.intake.cells import check

    source = warm_up(*body)
    verdicts = grade_with("ex03", cells(warm=source))
    verdict = verdicts["ex03-test-warm-up"]
    assert not verdict.passed and ("not available here" in verdict.message or "not allowed" in verdict.message), \
        verdict.message
    ex = exercises["ex03"]
    notebook = answered_notebook(ex)
    for cell in notebook.cells:
        if cell.metadata.get("course", {}).get("id") == "ex03-warm-up":
            cell.source = source
    assert check(ex, notebook).flags, "an answer cell naming the test API is flagged for review"


def test_the_test_api_is_not_in_the_measured_namespace(exercises):
    """Even a name the allow-list let through finds no test API object in the child's namespace."""
    from course_grader.harness.allowlist.extract import measured_namespace
    from course_grader.harness.allowlist.rules import for_cell
    from course_grader.harness.child import setup_namespace

    ex = exercises["ex03"]
    namespace = setup_namespace(list(ex.setup_sources))
    assert {"student", "reference", "code", "spy", "Namespace"} <= set(namespace)
    everything = for_cell(set(namespace), (), ())
    measured = measured_namespace(namespace, everything)
    assert not {"student", "reference", "code", "spy", "Namespace", "passed"} & set(measured)
    assert "eval" not in measured["__builtins__"] and "h" in measured


def test_a_keyword_warm_up_is_graded_by_what_torch_reuses(grade_with):
    """torch (checked live by the replay) reuses the graph of compiled_h(x=x) for positional calls."""
    body = ("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x=x)")
    verdict = grade_with("ex03", cells(warm=warm_up(*body)))["ex03-test-warm-up"]
    assert verdict.passed, verdict.message


# What the recorded calls cannot say (adv-report: mal02, mal03, mal07): the stand-in's calls really compile, and
# once warm_up has returned, each recorded call made again there, as the replay makes it, must compile nothing.
@pytest.mark.parametrize("body, phrase", [
    # (a) Dynamo guards on a tensor's type: a Parameter's graph does not serve the plain tensors of serving
    (("p = nn.Parameter(torch.randn(4, 8), requires_grad=False)", "torch._dynamo.mark_dynamic(p, 0)",
      "compiled_h(p)"), "does not serve it"),
    # (b) and on autocast, at the time of the call
    (("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "with torch.autocast('cpu'):",
      "    compiled_h(x)"), "does not serve it"),
    # ... and on the deterministic-algorithms setting, left on for the calls only
    (("torch.use_deterministic_algorithms(True)", "x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)",
      "compiled_h(x)", "torch.use_deterministic_algorithms(False)"), "does not serve it"),
    # (c) a warm-up undone after its calls: nothing it compiled is left for serving
    (("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)", "torch.compiler.reset()"),
     "does not serve it"),
    # a global setting the warm-up changes and leaves changed: serving's state is the one before it
    (("torch.set_num_threads(3)", "x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"),
     "does not serve it"),
])
def test_a_warm_up_serving_would_not_reuse_fails_whatever_its_record_says(grade_with, body, phrase):
    verdicts = grade_with("ex03", cells(warm=warm_up(*body)))
    verdict = verdicts["ex03-test-warm-up"]
    assert not verdict.passed and phrase in verdict.message, verdict.message
    assert all(verdicts[t].passed for t in PREDICTION_TESTS)


@pytest.mark.parametrize("body", [
    # torch.compiler.reset() before warming up empties the caches and leaves the warm-up's graphs alone
    ("torch.compiler.reset()", "x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"),
    # a global setting changed and put back before the calls changes nothing
    ("torch.use_deterministic_algorithms(True)", "torch.use_deterministic_algorithms(False)",
     "x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)"),
    # an autocast call first, then the call serving reuses: served, as torch serves it
    ("x = torch.randn(4, 8)", "torch._dynamo.mark_dynamic(x, 0)", "compiled_h(x)", "with torch.autocast('cpu'):",
     "    compiled_h(x)"),
])
def test_a_warm_up_serving_reuses_passes_whatever_else_it_did(grade_with, body):
    verdict = grade_with("ex03", cells(warm=warm_up(*body)))["ex03-test-warm-up"]
    assert verdict.passed, verdict.message
