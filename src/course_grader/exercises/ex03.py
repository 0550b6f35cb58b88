"""ex03 verdicts: predicted compile counts (literals) and a warm-up that prevents recompiles.

``PREDICTED_A`` and ``PREDICTED_B`` are parsed here, never run. The counts they are
compared with come from a ``CompileCounter`` in a measuring process that runs only
the instructor's copy of the sequences (they include the grad-mode guard and the
0/1 specialisation recompile that nb04 teaches). ``warm_up`` is allow-listed source;
the harness calls it on a counted ``torch.compile(h)`` and then checks batch sizes
under ``fail_on_recompile``; the frame count and the outcomes are judged here.
"""

from __future__ import annotations

from ..context import AnswerError, GradeContext, TestVerdict, excerpt
from ..harness.ex03 import ALLOWED, WARM_UP
from ..sandbox import SandboxFault
from ..status import FaultKind

HARNESS = "ex03"
MAX_WARM_UP_FRAMES = 2
BATCH_SIZES = (2, 3, 5, 17, 33, 63, 64)   # the public cell names 2, 3, 17 and 64; the domain is 2..64


def _prediction_verdict(ctx: GradeContext, test_id: str, cell: str, name: str, actual: list[int],
                        what: str) -> TestVerdict:
    try:
        predicted = ctx.literal(cell, name)
    except AnswerError as exc:
        return TestVerdict(test_id, False, str(exc))
    if not isinstance(predicted, (list, tuple)) or not all(type(p) is int for p in predicted):
        return TestVerdict(test_id, False, f"{name} must be a list of integers, one per call")
    if len(predicted) != len(actual):
        return TestVerdict(test_id, False, f"{what}: {len(actual)} calls, but {name} has {len(predicted)} predictions")
    wrong = [f"  call {i}: predicted {p}, CompileCounter counted {a}"
             for i, (p, a) in enumerate(zip(predicted, actual, strict=True), 1) if p != a]
    if wrong:
        return TestVerdict(test_id, False,
                           f"{what}: {len(wrong)} of {len(actual)} predictions differ:\n" + "\n".join(wrong))
    return TestVerdict(test_id, True, f"your {len(actual)} predictions for {what} match CompileCounter")


def _warm_up_verdict(ctx: GradeContext) -> TestVerdict:
    test_id = "ex03-test-warm-up"
    try:
        source = ctx.function_source("ex03-warm-up", WARM_UP, ALLOWED)
    except AnswerError as exc:
        return TestVerdict(test_id, False, str(exc))
    try:
        reply = ctx.measure("warm_up", {"source": source, "batch_sizes": list(BATCH_SIZES)})
    except SandboxFault as fault:
        # The student's warm_up hung or crashed: this test fails; the predictions, which are
        # data checked against the instructor's own counts, keep their verdicts. A fault of the
        # grader's own goes on up and faults the attempt.
        if FaultKind(fault.kind) is FaultKind.GRADER:
            raise
        return TestVerdict(test_id, False, f"warm_up could not be measured ({FaultKind(fault.kind).value}): "
                                           "see the reason at the top of this page")
    if reply.get("load_error"):
        return TestVerdict(test_id, False, f"warm_up could not be loaded: {excerpt(reply['load_error'])}")
    if reply.get("error"):
        return TestVerdict(test_id, False, f"warm_up raised {excerpt(reply['error'])}")
    frames = reply.get("frames")
    if type(frames) is not int or frames < 1:
        return TestVerdict(test_id, False, "warm_up did not call compiled_h: nothing was compiled")
    if frames > MAX_WARM_UP_FRAMES:
        return TestVerdict(test_id, False, f"warm_up compiled {frames} times; at most {MAX_WARM_UP_FRAMES} are allowed "
                                           "(think about dynamic shapes)")
    calls = reply.get("calls") or {}
    bad = [n for n in BATCH_SIZES if calls.get(str(n)) != "ok"]
    if bad:
        return TestVerdict(test_id, False, f"after your warm-up, batch size(s) {bad} would recompile "
                                           f"(fail_on_recompile raised: {str(calls.get(str(bad[0])))[:200]})")
    return TestVerdict(test_id, True, f"after warm_up ({frames} compilation(s)), batch sizes {list(BATCH_SIZES)} "
                                      "run under fail_on_recompile")


def grade(ctx: GradeContext) -> list[TestVerdict]:
    truth = ctx.measure("counts", {})
    return [
        _prediction_verdict(ctx, "ex03-test-a", "ex03-predict-a", "PREDICTED_A", truth["a"]["new"], "sequence A"),
        _warm_up_verdict(ctx),
        _prediction_verdict(ctx, "ex03-hidden-b", "ex03-predict-b", "PREDICTED_B", truth["b"]["new"], "sequence B"),
    ]
