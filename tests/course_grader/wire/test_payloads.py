"""``wire.payloads``: the questions a measuring child is asked and its replies, typed once for both sides.

The grader builds a request and sends ``to_data()``; the child reads the same type back and refuses any
other shape before it runs anything. The grader reads every reply's shape in ``read_serve_reply`` /
``read_replay_reply``: a malformed one is a failed test with its reason (the student's), never a grader fault.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch

from compile_course import measurement
from course_grader.harness import child
from course_grader.verdict import testcells
from course_grader.verdict.context import GradeContext
from course_grader.wire.payloads import (
    AllowSpec,
    Arg,
    ArgKind,
    CallOptions,
    CompileOptions,
    FunctionSpec,
    Op,
    PayloadError,
    ReplayItem,
    ReplayRequest,
    ServeRequest,
    TimeOptions,
    read_replay_reply,
    read_serve_reply,
)

SOURCE = "def double(x):\n    return x * 2\n"
FUNCTION = FunctionSpec(SOURCE, AllowSpec(["torch"], [], []))


def request(op=Op.CALL, args=None, options=None, function=FUNCTION) -> ServeRequest:
    args = [Arg(ArgKind.VALUE, measurement.to_data(torch.tensor([1.0, 2.0])))] if args is None else args
    return ServeRequest([], function, "double", op, args, options or CallOptions(grad=False))


@pytest.mark.parametrize("built", [
    request(),
    request(function=None),
    request(options=CallOptions(grad=True, alone=True)),
    request(Op.CALL_EACH, [[Arg(ArgKind.CODE, "torch.ones(2)", ["def f():\n    pass"])], []]),
    request(Op.COMPILE, [[Arg(ArgKind.SPY, "helper")]], CompileOptions("inductor", True, None, "eager_on_recompile")),
    request(Op.TIME, [Arg(ArgKind.STOPWATCH, "watched")], TimeOptions(None, 5, "ab12")),
    request(Op.TIME, [], TimeOptions("eager", 3)),
])
def test_a_request_reads_back_as_what_the_grader_built(built):
    data = json.loads(json.dumps(built.to_data()))      # what crosses the wire is plain JSON
    assert ServeRequest.from_data(data) == built


def test_the_wire_format_is_the_one_both_sides_have_always_spoken():
    data = request(Op.TIME, [Arg(ArgKind.CODE, "x", [])], TimeOptions("eager", 3)).to_data()
    assert data == {"setup": [], "function": {"source": SOURCE, "allow": {"provided": ["torch"], "imports": [],
                                                                          "allow": []}},
                    "name": "double", "op": "time", "args": [{"code": "x", "defs": []}],
                    "options": {"backend": "eager", "calls": 3}}     # no "now": equal questions stay equal


def bad(**change) -> dict:
    data = request().to_data()
    data.update(change)
    return data


@pytest.mark.parametrize("data, phrase", [
    ([], "serve request: list is not dict"),
    ({k: v for k, v in bad().items() if k != "options"}, "fields"),
    (bad(extra=1), "fields"),
    (bad(op="delete"), "unknown question"),
    (bad(name=3), "name: int is not str"),
    (bad(setup=["ok", 1]), "setup item"),
    (bad(args=[{"value": 1, "spy": "x"}]), "not an argument's"),
    (bad(args=[{"spy": 3}]), "argument.spy"),
    (bad(options={"grad": 1}), "options.grad: int is not bool"),
    (bad(options={"grad": False, "alone": "yes"}), "options.alone: str is not bool"),
    (bad(op="compile", args=[{"value": 1}]), "a call's args"),
    (bad(function={"source": SOURCE}), "function: fields"),
])
def test_a_malformed_request_is_refused_with_what_is_wrong(data, phrase):
    with pytest.raises(PayloadError, match=phrase):
        ServeRequest.from_data(data)


def test_the_child_refuses_a_malformed_payload_before_running_anything():
    with pytest.raises(PayloadError):
        child.serve(bad(setup=["raise SystemExit('ran')"], op="nope"))
    with pytest.raises(PayloadError):
        child.replay({"items": [{"graph": {}}], "params": [], "grad": False})


def test_the_child_answers_in_the_reply_type_the_grader_reads():
    reply = child.serve(request().to_data())
    got = read_serve_reply(reply, Op.CALL)
    assert got.load_error is None
    assert torch.equal(measurement.CallResult.from_data(got.answer).value, torch.tensor([2.0, 4.0]))
    broken = child.serve(request(function=FunctionSpec("def double(x):\n    return open('f')\n",
                                                       AllowSpec(["torch"], [], []))).to_data())
    assert read_serve_reply(broken, Op.CALL).load_error


@pytest.mark.parametrize("reply, op, count, phrase", [
    ([], Op.CALL, None, "unexpected form"),
    ({"load_error": 7}, Op.CALL, None, "load_error: int is not str"),
    ({"load_error": None, "runs": []}, Op.CALL, None, "not result"),
    ({"load_error": None, "result": {}, "extra": 1}, Op.CALL, None, "not result"),
    ({"load_error": None, "results": [{}]}, Op.CALL_EACH, 2, "wrong number of results"),
    ({"load_error": None, "runs": {}}, Op.COMPILE, 1, "wrong number of compile runs"),
])
def test_a_reply_of_the_wrong_shape_is_refused(reply, op, count, phrase):
    with pytest.raises(PayloadError, match=phrase):
        read_serve_reply(reply, op, count)


def test_a_replay_reply_needs_one_result_per_graph_sent():
    assert read_replay_reply({"results": [1, 2]}, 2) == [1, 2]
    for reply in ({"results": [1]}, {"results": [1, 2], "more": 0}, [], {"results": "xx"}):
        with pytest.raises(PayloadError):
            read_replay_reply(reply, 2)
    built = ReplayRequest([ReplayItem({"nodes": []}, [1])], ["x"], True)
    assert ReplayRequest.from_data(json.loads(json.dumps(built.to_data()))) == built


@pytest.mark.parametrize("forge", [
    lambda reply: {**reply, "extra": "field"},
    lambda reply: {"load_error": None, "results": reply.get("result")},
    lambda reply: {"load_error": ["not", "text"]},
])
def test_a_malformed_reply_fails_the_students_tests_with_a_reason_never_a_grader_fault(exercises, forge):
    def measure(entry, payload):
        if entry == "replay":
            return child.replay(copy.deepcopy(payload))
        return forge(child.serve(copy.deepcopy(payload)))
    model = next(c for c in exercises["ex01"].solutions)
    ctx = GradeContext(exercises["ex01"], {model.course_id: "def safe_normalize_rewrite(x):\n    return x\n"},
                       measure)
    verdicts = testcells.grade(ctx)       # raises nothing: no grader fault
    assert verdicts and not any(v.passed for v in verdicts)
    assert all(v.message and "could not check" not in v.message for v in verdicts), verdicts
