"""compile_course.measurement.spy: what a spy records, how the record is read back, and its calls remade."""

import json

import pytest
import torch

from compile_course.measurement.codec import ReplyError, tensor_marks
from compile_course.measurement.spy import Spy, describe_arg, make_spied_args, make_spied_call, read_spy_calls


def recorded(*calls, **kwargs):
    spy = Spy(lambda *a, **k: None)
    for args in calls:
        spy(*args, **kwargs)
    return json.loads(json.dumps(spy.records()))


def test_a_spy_calls_the_real_function_and_records_shapes_not_values():
    spy = Spy(lambda x, scale=1: x * scale)
    out = spy.stand_in(torch.ones(2, 3, dtype=torch.float64), scale=2)
    assert torch.equal(out, torch.full((2, 3), 2.0, dtype=torch.float64))
    call, = spy.calls
    assert call["args"][0]["tensor"]["shape"] == [2, 3] and call["args"][0]["tensor"]["dtype"] == "float64"
    assert call["kwargs"] == {"scale": {"value": 2}} and call["grad_enabled"] is True
    assert call["stance"] == "default"


def test_the_stand_in_leads_nowhere():
    spy = Spy(len)
    assert spy.stand_in.__name__ == "len" and not vars(spy.stand_in)


def test_a_record_read_back_remakes_calls_of_the_same_dtypes_shapes_and_marks():
    x = torch.randn(5, 3, requires_grad=True)
    torch._dynamo.mark_dynamic(x, 0)
    with torch.no_grad():
        calls = read_spy_calls(recorded((x, 4), key=torch.zeros(2, dtype=torch.int64)))
    args, kwargs, grad_enabled = make_spied_call(calls[0], seed=1)
    assert grad_enabled is False and args[1] == 4
    assert args[0].shape == (5, 3) and args[0].requires_grad and tensor_marks(args[0]) == {"dynamic": [0]}
    assert kwargs["key"].dtype == torch.int64 and kwargs["key"].shape == (2,)
    assert torch.equal(make_spied_args(calls[0], seed=1)[0][0], args[0])           # same seed, same values
    assert not torch.equal(make_spied_call(calls[0], seed=2)[0][0], args[0])


def test_a_record_that_cannot_be_replayed_faithfully_is_refused_saying_why():
    with pytest.raises(ReplyError, match="set_stance"):
        torch.compiler.set_stance("force_eager")
        try:
            calls = recorded((torch.ones(2),))
        finally:
            torch.compiler.set_stance("default")
        read_spy_calls(calls)
    with pytest.raises(ReplyError, match="not contiguous"):
        read_spy_calls(recorded((torch.ones(3, 2).t(),)))
    with pytest.raises(ReplyError, match="'meta'"):
        read_spy_calls(recorded((torch.ones(2, device="meta"),)))


@pytest.mark.parametrize("call", [
    {"args": [], "kwargs": {"_private": {"value": 1}}, "grad_enabled": True, "stance": "default",
     "served": True, "reason": ""},
    {"args": [{"tensor": {"dtype": "float32", "shape": [1 << 30]}}], "kwargs": {}, "grad_enabled": True,
     "stance": "default", "served": True, "reason": ""},
    {"args": [{"other": 1}], "kwargs": {}, "grad_enabled": True, "stance": "default",
     "served": True, "reason": ""},
    {"args": [], "kwargs": {}, "grad_enabled": 1, "stance": "default",
     "served": True, "reason": ""},
])
def test_a_malformed_record_is_refused(call):
    with pytest.raises(ReplyError):
        read_spy_calls([call])


def _served(spy: Spy) -> list:
    return [(r["served"], r["reason"]) for r in spy.records()]


def gelu(x):
    return torch.nn.functional.gelu(x) * 2


def marked(x: torch.Tensor) -> torch.Tensor:
    torch._dynamo.mark_dynamic(x, 0)
    return x


def test_the_stand_in_really_compiles_and_a_call_served_by_what_it_compiled_is_served():
    spy = Spy(gelu)
    spy.stand_in(x=marked(torch.randn(4, 8)))              # a keyword call: torch serves the replay's keyword call
    with torch.no_grad():
        spy.stand_in(marked(torch.randn(5, 8)))
    assert spy._counter.frame_count == 2 and _served(spy) == [(True, ""), (True, "")]
    assert spy._counter.frame_count == 2                    # the check compiled nothing


def on_a_parameter(f):
    f(marked(torch.nn.Parameter(torch.randn(4, 8), requires_grad=False)))


def under_autocast(f):
    with torch.autocast("cpu"):
        f(marked(torch.randn(4, 8)))


def then_reset(f):
    f(marked(torch.randn(4, 8)))
    torch.compiler.reset()


@pytest.mark.parametrize("calls, said", [(on_a_parameter, "Parameter"), (under_autocast, "GLOBAL_STATE"),
                                         (then_reset, "cached any more")])
def test_a_call_what_it_compiled_does_not_serve_is_marked_and_refused(calls, said):
    spy = Spy(gelu)
    calls(spy.stand_in)
    records = spy.records()
    assert records[0]["served"] is False and said in records[0]["reason"], records[0]
    with pytest.raises(ReplyError, match="does not serve it"):
        read_spy_calls(json.loads(json.dumps(records)))


def test_a_global_setting_left_changed_is_put_back_for_the_check_and_after_it():
    spy = Spy(gelu)
    before = torch.get_num_threads()
    torch.set_num_threads(before + 1)
    try:
        spy.stand_in(marked(torch.randn(4, 8)))             # compiled under another thread count
        (served, reason), = _served(spy)
        assert not served and "num_threads" in reason and torch.get_num_threads() == before + 1
    finally:
        torch.set_num_threads(before)


def test_an_argument_that_is_not_data_is_described_by_its_type():
    assert describe_arg(object()) == {"value": {"object": "object"}}
