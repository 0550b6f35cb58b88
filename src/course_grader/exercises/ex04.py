"""ex04 verdicts: a comparison fixture must accept faithful and reject faulty transformations.

The fixture (allow-listed source) runs in the measuring process against
candidates the harness builds. Every test mixes faithful and faulty candidates,
compiled and uncompiled, so a fixture that answers from what a candidate *is*
(a ``torch.compile`` wrapper or not) or always says the same thing cannot pass
one. Which answer is right is decided here.
"""

from __future__ import annotations

from ..context import AnswerError, GradeContext, TestVerdict, excerpt, shown
from ..harness.ex04 import ALLOWED, FIXTURE

HARNESS = "ex04"
ANSWER_CELL = "ex04-fixture"

# test id -> {candidate name: the right answer}
TESTS: dict[str, dict[str, bool]] = {
    "ex04-test-faithful": {"gate compiled": True, "gate rewritten": True, "block compiled": True,
                           "block plain": True, "relu instead of gate": False},
    "ex04-test-values": {"dropped branch, compiled": False, "boundary at zero": False, "NaN scrubbed, compiled": False,
                         "gate rewritten, compiled": True},
    "ex04-test-grad-mode": {"detached square, compiled": False, "block forced eval": False,
                            "block forced eval, compiled": False, "block plain": True},
    "ex04-hidden-dtype": {"float32 inside": False, "float64 fast path, compiled": False, "gate compiled": True},
    "ex04-hidden-shape": {"first block only, compiled": False, "pairwise rows": False, "gate rewritten": True},
}
PASSED = {
    "ex04-test-faithful": "accepts faithful transformations (compiled and not) and rejects relu",
    "ex04-test-values": "flags a dropped branch, a boundary mistake at 0 and a NaN mistake",
    "ex04-test-grad-mode": "flags wrong gradients and a train/eval mode mistake",
    "ex04-hidden-dtype": "flags faults that appear only at float64",
    "ex04-hidden-shape": "flags faults that appear only at other batch sizes",
}


def grade(ctx: GradeContext) -> list[TestVerdict]:
    try:
        source = ctx.function_source(ANSWER_CELL, FIXTURE, ALLOWED)
    except AnswerError as exc:
        return [TestVerdict(t, False, str(exc)) for t in TESTS]
    names = sorted({name for expected in TESTS.values() for name in expected})
    reply = ctx.measure("judge", {"source": source, "candidates": names})
    if reply.get("load_error"):
        why = excerpt(reply["load_error"])
        return [TestVerdict(t, False, f"your fixture could not be loaded: {why}") for t in TESTS]
    results = reply.get("results") or {}
    verdicts = []
    for test_id, expected in TESTS.items():
        wrong = []
        for name, right in expected.items():
            got = results.get(name) or {}
            if got.get("error"):
                wrong.append(f"  {name}: your fixture raised or misbehaved: {excerpt(got['error'])}")
            elif got.get("result") is not right:
                wrong.append(f"  {name}: your fixture said {shown(got.get('result'))}, but the candidate is "
                             f"{'faithful' if right else 'NOT equivalent'}")
        verdicts.append(TestVerdict(test_id, not wrong, PASSED[test_id] if not wrong else
                                    f"{len(wrong)} of {len(expected)} candidates judged wrongly:\n" + "\n".join(wrong)))
    return verdicts
