"""The messages between the grader and its sandboxed children, written once for both sides.

Transport: newline-delimited JSON over inherited file descriptors (a socketpair per
run for requests and replies, a pipe for the reaper's status). Every request the
grader sends carries a fresh ``nonce``; a reply must echo it, so a reply cannot be
prepared before its request exists. Replies are JSON primitives of exact types
(checked by :func:`check_json`); tensors travel as ``{"dtype", "shape", "data"}``
with ``data`` the base64 of the raw bytes (:func:`encode_tensor`,
:func:`decode_tensor`). Nothing is ever pickled, and nothing a child sends is
executed or taken as a verdict.

What this module does not do: it decides nothing. It only says whether a message is
well formed; the trusted side still checks what the data means.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from course_grader.errors import ProtocolError
from course_grader.status import Confinement

MAX_MESSAGE_BYTES = 32 << 20      # one JSON line; a measured reply with tensors fits well inside
MAX_JSON_DEPTH = 32


class MessageType(StrEnum):
    # grader -> template
    SPAWN = "spawn"                    # fork one run; its descriptors travel with the message
    # template -> grader
    TEMPLATE_READY = "template-ready"
    # reaper (the run's trusted parent) -> grader, on the status pipe
    STARTED = "started"
    EXITED = "exited"
    TASKS_REFUSED = "tasks-refused"
    # run -> grader
    READY = "ready"
    CELL_RESULT = "cell-result"
    MEASURE_RESULT = "measure-result"
    # grader -> run
    RUN_CELL = "run-cell"
    MEASURE = "measure"
    STOP = "stop"


class RunMode(StrEnum):
    """What a run serves (``Spawn.mode``); the value is what travels on the wire."""

    NOTEBOOK = "notebook"              # a submission's cells, one at a time, in an IPython shell
    MEASURE = "measure"                # calls of an instructor harness (``course_grader.harness``)


def new_nonce() -> str:
    return secrets.token_hex(16)


@dataclass
class Spawn:
    """Everything a run needs to confine itself; sent with its descriptors attached."""

    mode: RunMode
    confinement: Confinement           # root, userns (not root: user namespaces) or none (--unconfined)
    uid: int                           # 0 means: do not change uid (not root)
    hide: list[str]                    # folders covered by an empty read-only tmpfs
    cover: list[str]                   # folders covered by an empty tmpfs, what the run needs in them bound back
    reveal: list[str]                  # folders made visible inside hidden ones (measure: harness/) ...
    reveal_from: list[str]             # ... each bound read-only from this folder
    cgroups: list[str]                 # cgroup directories to join (v1: one per hierarchy)
    compile_cache: str                 # "" for none
    cache_writable: bool               # True only while the host is warming the cache
    memory_bytes: int                  # RLIMIT_AS; 0 when a memory cgroup caps the run instead
    cpu_s_total: int                   # RLIMIT_CPU hard limit of the run's first process
    file_bytes: int
    open_files: int
    threads: int                       # torch intra-op threads in the child
    max_processes: int                 # RLIMIT_NPROC of a user-namespace run (no pids cgroup there)
    task_limit: int                    # > 0: no pids cgroup, the reaper's task gate caps the run at this many tasks
    nonce: str
    type: str = MessageType.SPAWN.value


@dataclass
class TemplateReady:
    pid: int
    threads: int                       # threads alive in the template: must be 1 to fork safely
    nonce: str
    type: str = MessageType.TEMPLATE_READY.value


@dataclass
class Started:
    pid: int                           # host pid of the run's first process (PID 1 of its namespace)
    notices: list[str]                 # confinement that could not be applied
    nonce: str
    type: str = MessageType.STARTED.value


@dataclass
class Exited:
    status: int                        # exit code, or minus the signal number
    nonce: str
    type: str = MessageType.EXITED.value


@dataclass
class TasksRefused:
    total: int                         # new processes or threads the task gate has refused in this run so far
    nonce: str
    type: str = MessageType.TASKS_REFUSED.value


@dataclass
class Ready:
    nonce: str
    type: str = MessageType.READY.value


@dataclass
class RunCell:
    cell_id: str
    source: str
    cpu_s: int                         # CPU budget of this cell (the run's own accounting)
    output_bytes: int                  # printed text kept for this cell
    nonce: str = field(default_factory=new_nonce)
    type: str = MessageType.RUN_CELL.value


@dataclass
class CellReply:
    status: str                        # CellStatus value: ok or error
    output: str
    error: str | None                  # "ExcType: message", text only
    cpu_s: float
    dropped_bytes: int                 # printed text beyond the cap, counted, not kept
    nonce: str
    type: str = MessageType.CELL_RESULT.value


@dataclass
class Measure:
    harness: str                       # module name in course_grader.harness
    entry: str                         # function name in that module
    payload: dict
    nonce: str = field(default_factory=new_nonce)
    type: str = MessageType.MEASURE.value


@dataclass
class MeasureReply:
    ok: bool
    reply: dict | None                 # entry(payload), JSON primitives only
    error: str | None                  # one sanitized line when ok is False
    nonce: str
    type: str = MessageType.MEASURE_RESULT.value


@dataclass
class Stop:
    nonce: str = field(default_factory=new_nonce)
    type: str = MessageType.STOP.value


MESSAGES: dict[str, type] = {cls.type: cls for cls in (
    Spawn, TemplateReady, Started, Exited, TasksRefused, Ready, RunCell, CellReply, Measure, MeasureReply, Stop)}

_SCALAR_TYPES = {"str": (str,), "int": (int,), "float": (float, int), "bool": (bool,), "dict": (dict,),
                 "list[str]": (list,), "str | None": (str, type(None)), "dict | None": (dict, type(None)),
                 "RunMode": (str,), "Confinement": (str,)}
_ENUMS: dict[str, type[StrEnum]] = {"RunMode": RunMode, "Confinement": Confinement}   # sent as their values


def encode(message) -> bytes:
    """One message as a JSON line."""
    data = dataclasses.asdict(message, dict_factory=_plain)
    check_json(data)
    line = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode() + b"\n"
    if len(line) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(line)} bytes exceeds {MAX_MESSAGE_BYTES}")
    return line


def _plain(fields: list[tuple[str, Any]]) -> dict[str, Any]:
    """A message's fields as JSON values: an enum member becomes its value."""
    return {name: value.value if isinstance(value, StrEnum) else value for name, value in fields}


def decode(line: bytes, expect: type, nonce: str | None = None):
    """Parse one JSON line into ``expect``, checking every field's type and the nonce."""
    if len(line) > MAX_MESSAGE_BYTES:
        raise ProtocolError("message too long")
    try:
        data = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict) or data.get("type") != expect.type:
        got = data.get("type") if isinstance(data, dict) else type(data).__name__
        raise ProtocolError(f"expected a {expect.type!s} message, got {str(got)[:40]!r}")
    names = {f.name: f for f in dataclasses.fields(expect)}
    if set(data) != set(names):
        raise ProtocolError(f"{expect.type!s}: fields {sorted(set(data) ^ set(names))} wrong")
    for name, f in names.items():
        allowed = _SCALAR_TYPES[f.type]
        value = data[name]
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise ProtocolError(f"{expect.type!s}.{name}: {type(value).__name__} is not {f.type}")
        if f.type == "list[str]" and not all(isinstance(v, str) for v in value):
            raise ProtocolError(f"{expect.type!s}.{name}: not a list of strings")
    check_json(data)
    if nonce is not None and data["nonce"] != nonce:
        raise ProtocolError(f"{expect.type!s}: the reply does not echo the request's nonce")
    for name, f in names.items():
        if f.type in _ENUMS:
            try:
                data[name] = _ENUMS[f.type](data[name])
            except ValueError:
                raise ProtocolError(f"{expect.type!s}.{name}: {data[name][:40]!r} is not a {f.type}") from None
    return expect(**data)


def message_type(line: bytes) -> str | None:
    """The ``type`` field of a JSON line, or None if it has none (no other check)."""
    try:
        data = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def check_json(value: Any, depth: int = 0) -> None:
    """Raise ProtocolError unless ``value`` is made of exact JSON types (no subclasses, no NaN)."""
    if depth > MAX_JSON_DEPTH:
        raise ProtocolError("JSON nested too deeply")
    kind = type(value)
    if value is None or kind in (str, bool, int):
        return
    if kind is float:
        if not math.isfinite(value):
            raise ProtocolError("a non-finite float")
        return
    if kind is list:
        for item in value:
            check_json(item, depth + 1)
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise ProtocolError("a dict key that is not a string")
            check_json(item, depth + 1)
        return
    raise ProtocolError(f"{kind.__name__} is not a JSON primitive")


class LineReader:
    """Reads newline-delimited messages from a descriptor, refusing any longer than ``cap``."""

    def __init__(self, fd: int, cap: int = MAX_MESSAGE_BYTES):
        self.fd, self.cap, self.buf, self.eof = fd, cap, bytearray(), False

    def feed(self) -> bool:
        """Read what is available (one ``read``); False at end of file."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        if b"\n" not in chunk and len(self.buf) > self.cap:
            raise ProtocolError(f"a message longer than {self.cap} bytes")
        return True

    def next_line(self) -> bytes | None:
        """A complete line if one is buffered, else None."""
        cut = self.buf.find(b"\n")
        if cut < 0:
            return None
        if cut > self.cap:
            raise ProtocolError(f"a message longer than {self.cap} bytes")
        line = bytes(self.buf[:cut])
        del self.buf[:cut + 1]
        return line

    def read_line(self) -> bytes | None:
        """Block until a line arrives; None at end of file."""
        while (line := self.next_line()) is None:
            if not self.feed():
                return None
        return line


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# --- tensors ---------------------------------------------------------------------------------

# The codec is compile_course.measurement.codec (the test API's): one set of rules for every tensor on the wire.

def encode_tensor(tensor) -> dict:
    """A tensor as JSON data: its dtype name, shape and base64 raw bytes (contiguous, CPU)."""
    from compile_course.measurement.codec import ReplyError
    from compile_course.measurement.codec import encode_tensor as encode

    try:
        return encode(tensor)
    except ReplyError as exc:
        raise ProtocolError(str(exc)) from None


def decode_tensor(data: Any):
    """The tensor ``data`` describes; ProtocolError unless dtype, shape and byte count agree."""
    from compile_course.measurement.codec import ReplyError
    from compile_course.measurement.codec import decode_tensor as decode

    try:
        return decode(data)
    except ReplyError as exc:
        raise ProtocolError(str(exc)) from None
