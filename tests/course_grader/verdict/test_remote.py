"""``student`` at grading believes nothing a child that ran student code claims without a check.

These tests stand in for a child whose allow-list fell: its ``serve`` replies are forged here,
while the replay child (which runs no student code) is the real one, in this process.
"""

from __future__ import annotations

import copy

import pytest
import torch

from compile_course import measurement
from compile_course.measurement import AnswerError, CallResult, ReplyError, Run
from course_grader.harness import child
from course_grader.verdict import testcells
from course_grader.verdict.context import GradeContext

MODEL = ("def safe_normalize_rewrite(x):\n    norm = x.norm()\n    positive = norm > 0\n"
         "    return torch.where(positive, x / torch.where(positive, norm, torch.ones_like(norm)), x)\n")


def context(exercises, serve, cells=None) -> GradeContext:
    def measure(entry, payload):
        if entry == "replay":
            return child.replay(copy.deepcopy(payload))
        return serve(copy.deepcopy(payload))
    return GradeContext(exercises["ex01"], cells or {"ex01-rewrite": MODEL}, measure)


def honest(payload):
    return child.serve(payload)


def test_the_honest_child_passes_every_test(exercises):
    verdicts = testcells.grade(context(exercises, honest))
    assert all(v.passed for v in verdicts), verdicts


def test_a_claimed_single_graph_that_does_not_give_the_reported_output_fails(exercises):
    def forged(payload):
        reply = child.serve(payload)
        for run in reply.get("runs", []):
            for call in run["calls"]:   # the claimed output is not what the captured graph computes
                value = measurement.from_data(call["value"])
                if isinstance(value, torch.Tensor):
                    call["value"] = measurement.to_data(value + 1)
        return reply
    student = testcells.RemoteNamespace(context(exercises, forged), student=True)
    with pytest.raises(ReplyError, match="re-running its captured graph does not give the output"):
        student.compile("safe_normalize_rewrite", (torch.tensor([3.0, -4.0]),))


def test_frames_claimed_without_a_graph_are_refused(exercises):
    def forged(payload):
        reply = child.serve(payload)
        for run in reply.get("runs", []):
            run["frames"], run["breaks"] = 1, []
        return reply
    reference_breaks = ("def safe_normalize_rewrite(x):\n    norm = x.norm()\n    if norm > 0:\n"
                        "        return x / norm\n    return x\n")
    ctx = context(exercises, forged, {"ex01-rewrite": reference_breaks})
    student = testcells.RemoteNamespace(ctx, student=True)
    with pytest.raises(ReplyError, match="frame count does not match"):
        student.compile("safe_normalize_rewrite", (torch.tensor([3.0, -4.0]),))


def test_a_graph_that_calls_anything_but_torch_ops_is_not_replayed(exercises):
    def forged(payload):
        reply = child.serve(payload)
        for run in reply.get("runs", []):
            for graph in run["graphs"]:
                for node in graph["nodes"]:
                    if node["op"] == "call_function":
                        node["target"] = "torch.save"
        return reply
    student = testcells.RemoteNamespace(context(exercises, forged), student=True)
    with pytest.raises(ReplyError, match="cannot be checked"):
        student.compile("safe_normalize_rewrite", (torch.tensor([3.0, -4.0]),))


@pytest.mark.parametrize("reply", [
    [],                                                   # not a dict
    {"load_error": None, "runs": [{"calls": "x"}]},       # a record of the wrong shape
    {"load_error": None, "runs": [[]]},
    {"load_error": None, "result": {"value": {"tensor": {"dtype": "float32", "shape": [10**9], "data": ""}},
                                    "grads": None, "error": None, "spied": None}},
    {"load_error": None, "result": {"value": 10**40, "grads": None, "error": None, "spied": None}},
])
def test_a_reply_of_an_unexpected_shape_fails_the_test_with_a_message_never_a_grader_fault(exercises, reply):
    verdicts = testcells.grade(context(exercises, lambda payload: copy.deepcopy(reply)))
    assert not any(v.passed for v in verdicts)
    assert all(v.message and "could not check" not in v.message for v in verdicts), verdicts


def test_nested_reply_is_refused_at_the_one_validation():
    deep: object = 1
    for _ in range(200):
        deep = {"list": [deep]}
    with pytest.raises(ReplyError):
        CallResult.from_data({"value": deep, "grads": None, "error": None, "spied": None})
    with pytest.raises(ReplyError):
        Run.from_data({"calls": [], "frames": 0, "graphs": [], "graphs_per_call": [], "breaks": ["x"] * 10**4,
                       "guard_failures": [], "recompiles": []})


def test_hidden_test_source_and_names_never_reach_the_child(exercises):
    seen = []

    def spying(payload):
        seen.append(repr(payload))
        return child.serve(payload)
    testcells.grade(context(exercises, spying))
    hidden = next(c for c in exercises["ex01"].tests if c.hidden)
    everything = "\n".join(seen)
    assert seen and hidden.source not in everything
    for label in ("-0.0 entries", "tiny values", "2-d with a zero row", "NaN entry", "hidden"):
        assert label not in everything, label   # the hidden cases' meaning stays in the grader


def test_an_answer_the_grader_cannot_read_fails_its_test(exercises):
    ctx = context(exercises, honest, {"ex01-rewrite": "safe_normalize_rewrite = 0x" + "f" * 5000})
    student = testcells.RemoteNamespace(ctx, student=True)
    with pytest.raises(AnswerError):
        student.call("safe_normalize_rewrite", torch.ones(2))


def _graph_dividing_by_five() -> dict:
    """A one-op graph right for x = [3, -4] (whose norm is 5) and wrong for almost any other x."""
    return {"nodes": [
        {"op": "placeholder", "name": "l_x_", "target": "L_x_", "args": {"tuple": []}, "kwargs": {"kwargs": {}},
         "source": "L['x']"},
        {"op": "call_function", "name": "div", "target": "_operator.truediv",
         "args": {"tuple": [{"node": "l_x_"}, 5.0]}, "kwargs": {"kwargs": {}}},
        {"op": "output", "name": "output", "target": "output", "args": {"tuple": [{"tuple": [{"node": "div"}]}]},
         "kwargs": {"kwargs": {}}}]}


def test_a_graph_that_only_reproduces_the_asked_inputs_fails_on_new_ones(exercises):
    # the breaking reference function, with a forged reply: one graph that is right on [3, -4] only
    breaking = ("def safe_normalize_rewrite(x):\n    norm = x.norm()\n    if norm > 0:\n"
                "        return x / norm\n    return x\n")

    def forged(payload):
        reply = child.serve(payload)
        for run in reply.get("runs", []):
            run.update(frames=1, graphs=[_graph_dividing_by_five()], graphs_per_call=[1], breaks=[])
        return reply
    student = testcells.RemoteNamespace(context(exercises, forged, {"ex01-rewrite": breaking}), student=True)
    x = torch.tensor([3.0, -4.0])
    with pytest.raises(ReplyError, match="re-run on new inputs"):
        student.compile("safe_normalize_rewrite", (x,), like=lambda t: t / t.norm())
    # without a reference to compare with, the claim is only checked on the inputs asked about
    assert student.compile("safe_normalize_rewrite", (x,)).frames == 1
    verdicts = {v.test_id: v for v in testcells.grade(context(exercises, forged, {"ex01-rewrite": breaking}))}
    assert not verdicts["ex01-test-capture"].passed, verdicts   # the notebook's capture test gives `like`


def test_fullgraph_success_without_any_graph_is_refused(exercises):
    def forged(payload):
        reply = child.serve(payload)
        for run in reply.get("runs", []):
            run.update(frames=0, graphs=[], graphs_per_call=[0] * len(run["calls"]), breaks=[])
        return reply
    student = testcells.RemoteNamespace(context(exercises, forged), student=True)
    with pytest.raises(ReplyError, match="fullgraph=True"):
        student.compile("safe_normalize_rewrite", (torch.tensor([3.0, -4.0]),), fullgraph=True)
