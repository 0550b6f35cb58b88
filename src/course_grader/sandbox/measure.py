"""The measuring process, child side: requests, each one instructor harness call and one JSON reply.

Runs in a fresh, confined worker (see ``template.worker``). Only this kind of run sees
``course_grader/harness`` (bound read-only into the otherwise covered grader package);
the notebook kernel never does. It imports ``course_grader.harness.<harness>``, calls
``entry(payload)`` and sends the result, which must be a dict of JSON primitives
(``protocol.check_json``). An exception becomes ``ok=False`` with one sanitized line;
the grader turns it into a ``SandboxFault``. A harness may import ``course_grader.wire.protocol``
(already loaded) and its own ``course_grader.harness`` modules, nothing else of the grader.
"""

from __future__ import annotations

import importlib
import os
import re

from course_grader.errors import ProtocolError
from course_grader.wire import protocol
from course_grader.wire.protocol import Measure, MeasureReply, Ready

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_REASON = 300


def one_line(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable message>"
    text = f"{type(exc).__name__}: {message}".splitlines()[0] if message else type(exc).__name__
    return "".join(c if c.isprintable() else "?" for c in text)[:MAX_REASON]


def call(request: Measure) -> MeasureReply:
    try:
        if not (NAME.fullmatch(request.harness) and NAME.fullmatch(request.entry)):
            raise ValueError("bad harness or entry name")
        module = importlib.import_module(f"course_grader.harness.{request.harness}")
        reply = getattr(module, request.entry)(request.payload)
        if type(reply) is not dict:
            raise TypeError(f"the harness returned {type(reply).__name__}, not a dict")
        protocol.check_json(reply)
        return MeasureReply(ok=True, reply=reply, error=None, nonce=request.nonce)
    except BaseException as exc:  # noqa: BLE001 - every failure is reported, as data
        return MeasureReply(ok=False, reply=None, error=one_line(exc), nonce=request.nonce)


def serve(chan_fd: int, ready_nonce: str) -> None:
    """Answer measuring requests one after the other until the grader closes the channel."""
    reader = protocol.LineReader(chan_fd)
    protocol.write_all(chan_fd, protocol.encode(Ready(nonce=ready_nonce)))
    server_pid = os.getpid()
    while True:
        line = reader.read_line()
        if line is None or protocol.message_type(line) != protocol.MessageType.MEASURE:
            return
        reply = call(protocol.decode(line, Measure))
        if os.getpid() != server_pid:   # a copy forked by the measured code: only the server replies
            os._exit(0)
        try:
            data = protocol.encode(reply)
        except ProtocolError as exc:
            data = protocol.encode(MeasureReply(ok=False, reply=None, error=one_line(exc), nonce=reply.nonce))
        protocol.write_all(chan_fd, data)
