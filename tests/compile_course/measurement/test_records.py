"""compile_course.measurement.records: each record travels as data and is validated when it is read back."""

import json

import pytest
import torch

from compile_course.measurement.codec import ReplyError
from compile_course.measurement.records import (
    COMPILE_STATS,
    Break,
    CallResult,
    Run,
    Timing,
    parse_break,
    read_timeline,
)

BREAK_MESSAGE = """Graph break in user code at /home/alice/nb.py:3
Graph Break Reason: Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html

User code traceback:
  File "/home/alice/nb.py", line 3, in f
"""


def through_json(data):
    return json.loads(json.dumps(data))


def test_a_call_result_round_trips():
    result = CallResult(torch.tensor([1.0, 2.0]), [torch.ones(2), None], None, None, 0.25,
                        {key: 1 for key in COMPILE_STATS}, None)
    back = CallResult.from_data(through_json(result.to_data()))
    assert torch.equal(back.value, result.value) and torch.equal(back.grads[0], torch.ones(2))
    assert back.grads[1] is None and back.ok and back.wall_s == 0.25 and back.compiled == result.compiled


@pytest.mark.parametrize("change, words", [
    ({"grads": {"list": [1]}}, "gradients"),
    ({"wall_s": -1}, "wall time"),
    ({"compiled": {"graphs": 1}}, "compile record"),
    ({"error": 3}, "'error'"),
])
def test_a_malformed_call_result_is_refused(change, words):
    data = {**CallResult(1).to_data(), **change}
    with pytest.raises(ReplyError, match=words):
        CallResult.from_data(data)


def test_a_run_round_trips_with_its_breaks_parsed_again():
    run = Run([CallResult(1), CallResult(2)], 2, [{"nodes": []}, {"nodes": []}], [2, 0],
              [parse_break(BREAK_MESSAGE)], ["- 0/0: x.size()[0] == 3"], ["recompile text"])
    back = Run.from_data(through_json(run.to_data()))
    assert back.frames == 2 and back.graphs_per_call == [2, 0] and [c.value for c in back.calls] == [1, 2]
    assert back.breaks == run.breaks and back.guard_failures == run.guard_failures


def test_a_run_whose_frames_and_graphs_disagree_is_refused():
    data = Run([CallResult(1)], 1, [{"nodes": []}], [1]).to_data()
    with pytest.raises(ReplyError, match="frame count"):
        Run.from_data({**data, "frames": 2})
    with pytest.raises(ReplyError, match="graph counts"):
        Run.from_data({**data, "graphs_per_call": [0]})


def test_a_break_is_read_in_torchs_words_without_paths_or_traceback():
    b = parse_break(BREAK_MESSAGE)
    assert b.gb_id == "GB0025"
    assert b.reason == "Call to `torch._dynamo.graph_break()`"
    assert b.explanation == "User-inserted graph break. Message: None"
    assert b.hints == ["Remove the `torch._dynamo.graph_break()` call."]
    assert "/home/alice" not in b.text and "User code traceback" not in b.text
    assert str(b) == "GB0025: User-inserted graph break. Message: None"
    assert str(Break(None, "reason")) == "graph break: reason"


def test_a_timing_round_trips_and_is_bounded():
    t = Timing(1.5, 0.001, 21, "cold", 2.0)
    assert Timing.from_data(through_json(t.to_data())) == t
    with pytest.raises(ReplyError, match="out of range"):
        Timing.from_data({**t.to_data(), "cache": "lukewarm"})


def timeline(**call):
    base = {"kind": "compiled", "compile": 0, "enter": 0.05, "start": 0.1, "end": 0.2, "exit": 0.25, "args": [],
            "keywords": 0, "graphs": 1, "fxgraph_hit": 0, "fxgraph_miss": 1, "threads": 1, "grad": True,
            "given": True, "raised": None}
    return {"calls": [{**base, **call}],
            "compiles": [{"backend": "inductor", "fullgraph": False, "dynamic": None, "mode": None}], "end": 1.0}


def test_a_timeline_is_read_back_as_plain_dicts():
    assert read_timeline(timeline())["calls"][0]["graphs"] == 1


@pytest.mark.parametrize("call", [{"start": 0.3}, {"end": 2.0}, {"enter": 0.15}, {"exit": 0.15}, {"exit": 1.5},
                                  {"kind": "eager"}, {"compile": 1}, {"graphs": -1}, {"args": [2 ** 64]},
                                  {"threads": 1.5}, {"grad": 1}, {"grad": None}, {"given": 1}, {"given": "yes"},
                                  {"raised": 1}, {"raised": "not a name"}, {"raised": "E" * 81}, {"raised": ""}])
def test_a_timeline_out_of_order_or_out_of_range_is_refused(call):
    with pytest.raises(ReplyError):
        read_timeline(timeline(**call))


def test_a_call_that_raised_and_its_grad_mode_and_inputs_are_read_back():
    read = read_timeline(timeline(raised="RuntimeError", grad=False, given=False))["calls"][0]
    assert (read["raised"], read["grad"], read["given"]) == ("RuntimeError", False, False)
    assert read_timeline(timeline(given=None))["calls"][0]["given"] is None


@pytest.mark.parametrize("key", ["raised", "grad", "given"])
def test_a_call_record_without_a_key_is_refused(key):
    data = timeline()
    del data["calls"][0][key]
    with pytest.raises(ReplyError, match="call record is malformed"):
        read_timeline(data)
