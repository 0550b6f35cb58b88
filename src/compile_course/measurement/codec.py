"""Values as JSON data and back: the tensor codec, and the one validation of every reply.

``to_data`` writes a value (tensors with their dtype, shape, raw bytes, requires_grad and
dynamic-shape marks; numbers, text, containers, dtypes) as plain JSON data; ``from_data`` reads it
back. ``from_data`` is the one place where a reply is validated: a wrong type, a giant number, a
deep nesting or an oversized tensor raises :class:`ReplyError`, which a test reports as a failure
with its message. The grader's wire format (``course_grader.wire.protocol``) sends its tensors with
this codec too, so every tensor on the wire follows one set of rules.

Not here: the records built from these values (``records``) and how they are measured (``run``).
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

import torch

MAX_DEPTH = 12
MAX_ITEMS = 20_000
MAX_TEXT = 20_000
MAX_TENSOR_BYTES = 16 << 20
MAX_INT = 2 ** 63
TENSOR_DTYPES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
                 "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}
MAX_ERROR = 400
FILE_PATHS = re.compile(r"(?<![\w.:/-])(/[^\s:'\"]+)+")  # file paths, not the path part of a URL


class ReplyError(AssertionError):
    """A reply or an answer that is not the data it should be. Its text is for the student.

    An ``AssertionError``: a test that meets one fails with its message, in the notebook and at grading."""


class AnswerError(ReplyError):
    """The student's answer cannot be used: missing, not a literal, not a function, not allowed."""


def error_text(exc: BaseException) -> str:
    """``TypeName: first line``, without file paths, short."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose str() fails still has a type
        message = ""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {FILE_PATHS.sub('<path>', first)}"[:MAX_ERROR].rstrip(": ")


# --------------------------------------------------------------------------- tensors

def encode_tensor(t: torch.Tensor) -> dict:
    name = str(t.dtype).removeprefix("torch.")
    if name not in TENSOR_DTYPES:
        raise ReplyError(f"a tensor of dtype {name} cannot be reported")
    plain = t.detach().to("cpu").contiguous()
    if plain.numel() * TENSOR_DTYPES[name] > MAX_TENSOR_BYTES:
        raise ReplyError(f"a tensor of {plain.numel()} elements is too large to report")
    raw = plain.reshape(-1).view(torch.uint8).numpy().tobytes() if plain.numel() else b""
    return {"dtype": name, "shape": list(plain.shape), "data": base64.b64encode(raw).decode("ascii")}


def decode_tensor(data: Any) -> torch.Tensor:
    if type(data) is not dict or set(data) != {"dtype", "shape", "data"}:
        raise ReplyError("a tensor is reported as its dtype, shape and data")
    name, shape, text = data["dtype"], data["shape"], data["data"]
    if type(name) is not str or name not in TENSOR_DTYPES:
        raise ReplyError("a tensor's dtype is not one that can be reported")
    if type(shape) is not list or len(shape) > 8 or not all(type(n) is int and 0 <= n < MAX_INT for n in shape):
        raise ReplyError("a tensor's shape must be a short list of sizes")
    size = math.prod(shape) * TENSOR_DTYPES[name]
    if type(text) is not str or size > MAX_TENSOR_BYTES or len(text) > 4 * (MAX_TENSOR_BYTES // 3 + 1):
        raise ReplyError("a tensor's data is missing or too large")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise ReplyError("a tensor's data is not base64") from None
    if len(raw) != size:
        raise ReplyError("a tensor's data does not match its shape and dtype")
    dtype = getattr(torch, name)
    if not size:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def tensor_marks(t: torch.Tensor) -> dict:
    """What ``mark_dynamic``, ``maybe_mark_dynamic``, ``mark_static`` and ``mark_unbacked`` left on ``t``."""
    marks = {}
    for key, attr in (("dynamic", "_dynamo_dynamic_indices"), ("maybe_dynamic", "_dynamo_weak_dynamic_indices"),
                      ("static", "_dynamo_static_indices"), ("unbacked", "_dynamo_unbacked_indices")):
        dims = getattr(t, attr, None)
        if dims:
            marks[key] = sorted(int(d) for d in dims)
    return marks


def apply_marks(t: torch.Tensor, marks: dict) -> torch.Tensor:
    from torch._dynamo import decorators

    for d in marks.get("dynamic", ()):
        torch._dynamo.mark_dynamic(t, d)
    for d in marks.get("maybe_dynamic", ()):
        torch._dynamo.maybe_mark_dynamic(t, d)
    for d in marks.get("static", ()):
        torch._dynamo.mark_static(t, d)
    for d in marks.get("unbacked", ()):
        decorators.mark_unbacked(t, d)
    return t


# --------------------------------------------------------------------------- values

def to_data(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: tensors (with requires_grad and dynamic-shape marks), numbers, text,
    containers and dtypes. Anything else is reported by its type name only."""
    if depth > MAX_DEPTH:
        raise ReplyError("the value is nested too deeply to report")
    if value is None or type(value) is bool:
        return value
    if type(value) is str:
        if len(value) > MAX_TEXT:
            raise ReplyError(f"it holds a text of {len(value)} characters, too long to be an answer")
        return value
    if type(value) is int:
        if abs(value) >= MAX_INT:
            raise ReplyError("it holds an integer too large to be an answer")
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.Tensor):
        out = {"tensor": encode_tensor(value)}
        if value.requires_grad:
            out["requires_grad"] = True
        marks = tensor_marks(value)
        if marks:
            out["marks"] = marks
        return out
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, (list, tuple, torch.Size)):
        if len(value) > MAX_ITEMS:
            raise ReplyError("the value has too many items to report")
        items = [to_data(v, depth + 1) for v in value]
        return {"list": items} if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise ReplyError("the value has too many items to report")
        return {"dict": [[to_data(k, depth + 1), to_data(v, depth + 1)] for k, v in value.items()]}
    return {"object": type(value).__name__[:80]}


class Opaque:
    """A value that cannot travel as data, known only by its type's name."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Opaque) and other.type_name == self.type_name

    __hash__ = None


def to_data_safe(value: Any) -> Any:
    """``value`` itself if it can travel as data, else an :class:`Opaque` of its type."""
    try:
        to_data(value)
        return value
    except ReplyError:
        return Opaque(type(value).__name__)


def to_data_safe_data(a: Any) -> Any:
    """``to_data(a)``, or ``{"object": its type's name}`` if it cannot travel as data."""
    try:
        return to_data(a)
    except ReplyError:
        return {"object": type(a).__name__[:80]}


def from_data(data: Any, depth: int = 0, budget: list | None = None) -> Any:
    """The value ``to_data`` described; :class:`ReplyError` for anything else."""
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ReplyError("the reply has too many items")
    if depth > MAX_DEPTH + 2:
        raise ReplyError("the reply is nested too deeply")
    if data is None or type(data) is bool:
        return data
    if type(data) is int:
        if abs(data) >= MAX_INT:
            raise ReplyError("the reply holds an integer too large to be an answer")
        return data
    if type(data) is float:
        return data
    if type(data) is str:
        if len(data) > MAX_TEXT:
            raise ReplyError("the reply holds a text too long to be an answer")
        return data
    if type(data) is not dict or not 1 <= len(data) <= 3:
        raise ReplyError(f"the reply holds a value of an unexpected form ({type(data).__name__})")
    if "tensor" in data:
        if set(data) - {"tensor", "requires_grad", "marks"}:
            raise ReplyError("a reported tensor has unexpected fields")
        t = decode_tensor(data["tensor"])
        marks = data.get("marks") or {}
        if type(marks) is not dict or set(marks) - {"dynamic", "maybe_dynamic", "static", "unbacked"} or not all(
                type(v) is list and all(type(d) is int and 0 <= d < t.dim() for d in v) for v in marks.values()):
            raise ReplyError("a reported tensor has malformed dynamic-shape marks")
        if data.get("requires_grad") is True:
            if not (t.is_floating_point() or t.is_complex()):
                raise ReplyError("only a floating-point tensor can require grad")
            t.requires_grad_(True)
        return apply_marks(t, marks) if marks else t
    if len(data) != 1:
        raise ReplyError("the reply holds a value of an unexpected form")
    (kind, inner), = data.items()
    if kind == "float" and inner in ("nan", "inf", "-inf"):
        return float(inner)
    if kind == "dtype" and type(inner) is str and inner in TENSOR_DTYPES:
        return getattr(torch, inner)
    if kind in ("list", "tuple") and type(inner) is list:
        items = [from_data(v, depth + 1, budget) for v in inner]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and type(inner) is list:
        out = {}
        for pair in inner:
            if type(pair) is not list or len(pair) != 2:
                raise ReplyError("a reported dict is malformed")
            key = from_data(pair[0], depth + 1, budget)
            try:
                out[key] = from_data(pair[1], depth + 1, budget)
            except TypeError:
                raise ReplyError("a reported dict has a key that cannot be a key") from None
        return out
    if kind == "object" and type(inner) is str and len(inner) <= 80:
        return Opaque(inner)
    raise ReplyError("the reply holds a value of an unexpected form")
