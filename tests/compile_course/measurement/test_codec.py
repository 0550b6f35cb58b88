"""compile_course.measurement.codec: values as data and back, and the one validation of every reply."""

import json

import pytest
import torch

from compile_course.measurement.codec import (
    MAX_INT,
    MAX_TENSOR_BYTES,
    AnswerError,
    Opaque,
    ReplyError,
    decode_tensor,
    encode_tensor,
    error_text,
    from_data,
    tensor_marks,
    to_data,
    to_data_safe,
)


def round_trip(value):
    return from_data(json.loads(json.dumps(to_data(value))))   # through JSON text, as on the wire


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int8, torch.uint8, torch.bool, torch.complex64])
def test_a_tensor_comes_back_bit_for_bit(dtype):
    t = (torch.randn(3, 4) * 10).to(dtype)
    back = round_trip(t)
    assert back.dtype == dtype and back.shape == t.shape and torch.equal(back, t)


def test_negative_zero_nan_and_infinities_survive():
    t = torch.tensor([-0.0, float("nan"), float("inf"), -float("inf")], dtype=torch.float64)
    back = round_trip(t)
    assert torch.equal(torch.signbit(back), torch.signbit(t)) and back.isnan()[1] and back.isinf().sum() == 2
    assert [repr(x) for x in round_trip([float("nan"), float("inf")])] == ["nan", "inf"]


def test_requires_grad_and_dynamic_marks_travel_with_a_tensor():
    t = torch.randn(4, 3, requires_grad=True)
    torch._dynamo.mark_dynamic(t, 0)
    back = round_trip(t)
    assert back.requires_grad and tensor_marks(back) == {"dynamic": [0]}


def test_containers_keep_their_kind_and_dtypes_come_back():
    value = {"a": [1, 2.5, None, True], ("k", 1): (torch.float16, "text")}
    assert round_trip(value) == value
    assert round_trip(torch.Size([2, 3])) == (2, 3)


def test_anything_else_travels_by_its_type_name():
    back = round_trip(object())
    assert back == Opaque("object") and repr(back) == "<a object object>"
    assert to_data_safe(2 ** 70) == Opaque("int") and to_data_safe(3) == 3    # what cannot be data at all


def test_an_empty_tensor_round_trips():
    assert round_trip(torch.empty(0, 5)).shape == (0, 5)


@pytest.mark.parametrize("reply, words", [
    ({"tensor": {"dtype": "float32", "shape": [2], "data": "AAAA"}}, "does not match"),
    ({"tensor": {"dtype": "object", "shape": [1], "data": ""}}, "dtype"),
    ({"tensor": {"dtype": "float32", "shape": [1 << 40], "data": ""}}, "too large"),
    ({"tensor": {"dtype": "float32", "shape": [1], "data": "!!!!"}}, "base64"),
    ({"tensor": {"dtype": "int64", "shape": [1], "data": "AAAAAAAAAAA="}, "requires_grad": True}, "floating-point"),
    ({"tensor": {"dtype": "float32", "shape": [1], "data": "AAAAAA=="}, "marks": {"dynamic": [3]}}, "marks"),
    ({"tensor": {"dtype": "float32", "shape": [1], "data": "AAAAAA=="}, "extra": 1}, "unexpected fields"),
    (MAX_INT, "too large"),
    ({"set": [1]}, "unexpected form"),
    ([1, 2], "unexpected form"),
    ({"dict": [[{"list": []}, 1]]}, "cannot be a key"),
])
def test_a_malformed_reply_is_refused_with_words_for_the_student(reply, words):
    with pytest.raises(ReplyError, match=words):
        from_data(reply)


def test_depth_and_size_are_bounded_both_ways():
    deep = []
    for _ in range(20):
        deep = [deep]
    with pytest.raises(ReplyError, match="nested too deeply"):
        to_data(deep)
    data = {"list": []}
    for _ in range(20):
        data = {"list": [data]}
    with pytest.raises(ReplyError, match="nested too deeply"):
        from_data(data)
    with pytest.raises(ReplyError, match="too many items"):
        from_data({"list": [1] * 30_000})
    with pytest.raises(ReplyError, match="too large to report"):
        encode_tensor(torch.zeros(MAX_TENSOR_BYTES // 8 + 1, dtype=torch.float64))


def test_the_wire_shape_of_a_tensor_is_dtype_shape_and_base64_bytes():
    data = encode_tensor(torch.tensor([1.0], dtype=torch.float32))
    assert data == {"dtype": "float32", "shape": [1], "data": "AACAPw=="}
    assert torch.equal(decode_tensor(data), torch.tensor([1.0]))


def test_error_text_is_type_and_first_line_without_paths():
    exc = ValueError("cannot open /home/alice/secret/notes.txt\nsecond line")
    assert error_text(exc) == "ValueError: cannot open <path>"
    assert error_text(ValueError("see https://pytorch.org/docs/x")) == "ValueError: see https://pytorch.org/docs/x"
    assert error_text(KeyError()) == "KeyError"


def test_an_answer_error_is_a_reply_error_and_an_assertion():
    assert issubclass(AnswerError, ReplyError) and issubclass(ReplyError, AssertionError)
