"""protocol.py: message round trips, strict field types, nonces, tensors, byte caps."""

import base64
import os

import pytest
import torch

from course_grader.errors import ProtocolError
from course_grader.status import Confinement
from course_grader.wire import protocol
from course_grader.wire.protocol import CellReply, LineReader, RunCell, RunMode, Spawn


def test_message_round_trip_and_nonce():
    msg = RunCell(cell_id="ex01-rewrite", source="x = 1", cpu_s=5, output_bytes=100)
    line = protocol.encode(msg)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert protocol.decode(line.rstrip(), RunCell, msg.nonce) == msg
    with pytest.raises(ProtocolError, match="nonce"):
        protocol.decode(line.rstrip(), RunCell, protocol.new_nonce())


@pytest.mark.parametrize("bad", [
    b'{"type": "cell-result"}',                                        # fields missing
    b'[1, 2]',                                                         # not an object
    b'{"status": "ok", "output": "", "error": null, "cpu_s": 1, "dropped_bytes": true, "nonce": "n", '
    b'"type": "cell-result"}',
    b'{"status": "ok", "output": "", "error": null, "cpu_s": NaN, "dropped_bytes": 0, "nonce": "n", '
    b'"type": "cell-result"}',
    b'{"status": "ok", "output": "", "error": null, "cpu_s": 1, "dropped_bytes": 0, "nonce": "n", '
    b'"type": "cell-result", "extra": 1}',
    b'{"status": "ok", "output": "", "error": null, "cpu_s": 1, "dropped_bytes": 0, "nonce": "n", "type": "run-cell"}',
    b'\x80not json',
    b'[' * 100000 + b']' * 100000,                                     # deep nesting
])
def test_malformed_messages_are_refused(bad):
    with pytest.raises(ProtocolError):
        protocol.decode(bad, CellReply)


def test_check_json_accepts_exact_json_types_only():
    protocol.check_json({"a": [1, 2.5, "x", None, True, {"b": []}]})
    for bad in ({1: "x"}, {"a": (1, 2)}, {"a": {1}}, {"a": float("inf")}, {"a": b"x"}, {"a": object()}):
        with pytest.raises(ProtocolError):
            protocol.check_json(bad)

    class Sneaky(str):
        pass

    with pytest.raises(ProtocolError):
        protocol.check_json({"a": Sneaky("x")})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.int8, torch.uint8, torch.bool, torch.complex64])
def test_tensor_round_trip_is_exact(dtype):
    t = (torch.randn(3, 4, generator=torch.Generator().manual_seed(0)) * 7).to(dtype)
    data = protocol.encode_tensor(t.t())  # non-contiguous on purpose
    protocol.check_json(data)
    back = protocol.decode_tensor(data)
    assert back.dtype == dtype and back.shape == (4, 3)
    assert torch.equal(back, t.t())


def test_tensor_decode_validates_dtype_shape_and_size():
    good = protocol.encode_tensor(torch.ones(2, 3))
    assert protocol.decode_tensor(protocol.encode_tensor(torch.empty(0, 5))).shape == (0, 5)
    bad_cases = [
        {**good, "dtype": "object"},
        {**good, "dtype": "float64"},                                  # 24 bytes, float64 needs 48
        {**good, "shape": [2, 4]},
        {**good, "shape": [2, -3]},
        {**good, "shape": [True, 3]},
        {**good, "data": "not base64!"},
        {**good, "extra": 1},
        {"dtype": "float32", "shape": [1 << 30], "data": base64.b64encode(b"\0" * 8).decode()},
    ]
    for bad in bad_cases:
        with pytest.raises(ProtocolError):
            protocol.decode_tensor(bad)


def test_line_reader_caps_a_message():
    r, w = os.pipe()
    os.write(w, b"x" * 5000)
    os.close(w)
    with pytest.raises(ProtocolError, match="longer"):
        LineReader(r, cap=1000).read_line()
    os.close(r)


def test_line_reader_splits_lines_and_sees_eof():
    r, w = os.pipe()
    os.write(w, b'{"a":1}\n{"b":2}\n')
    os.close(w)
    reader = LineReader(r)
    assert reader.read_line() == b'{"a":1}'
    assert reader.read_line() == b'{"b":2}'
    assert reader.read_line() is None
    os.close(r)


def test_notices_that_weaken_confinement_are_told_apart():
    from course_grader.sandbox import policy
    from course_grader.sandbox.notices import Weakening
    from course_grader.status import Confinement

    notices = [Weakening.NO_MOUNT_NAMESPACE.notice("Operation not permitted"),
               Weakening.NOT_HIDDEN.notice("EPERM", "/srv/solutions"),
               "compile cache not shared (EINVAL): this run compiles cold",
               Weakening.NOT_PRIVATE.notice("EPERM", "/tmp")]
    assert notices[0] == "no mount namespace (Operation not permitted)"          # the words the run reports
    assert notices[3] == "could not make /tmp private: EPERM"
    assert [Weakening.of(n) for n in notices] == [Weakening.NO_MOUNT_NAMESPACE, Weakening.NOT_HIDDEN, None,
                                                  Weakening.NOT_PRIVATE]
    for confined in (Confinement.ROOT, Confinement.USERNS):   # confined runs, root or user namespaces: fail closed
        assert policy.weakened(notices, confined) == [notices[0], notices[1], notices[3]]
    assert policy.weakened(notices, Confinement.NONE) == []     # --unconfined: weaker by design, and said so


def test_every_weakening_reads_back_from_its_own_notice():
    from course_grader.sandbox.notices import Weakening

    for weakening in Weakening:
        assert Weakening.of(weakening.notice("EPERM", "/some/path")) is weakening


def spawn(**changes) -> Spawn:
    fields = dict(mode=RunMode.MEASURE, confinement=Confinement.USERNS, uid=0, hide=["/srv/solutions"], cover=[],
                  reveal=[], reveal_from=[], cgroups=[], compile_cache="", cache_writable=False, memory_bytes=0,
                  cpu_s_total=10, file_bytes=1, open_files=64, threads=1, max_processes=8, task_limit=0, nonce="n")
    return Spawn(**{**fields, **changes})


def test_a_spawns_mode_and_confinement_travel_as_their_values_and_come_back_as_types():
    line = protocol.encode(spawn())
    assert b'"mode":"measure"' in line and b'"confinement":"userns"' in line
    back = protocol.decode(line.rstrip(), Spawn)
    assert back == spawn() and back.mode is RunMode.MEASURE and back.confinement is Confinement.USERNS
    with pytest.raises(ProtocolError, match="mode.*not a RunMode"):
        protocol.decode(line.replace(b'"measure"', b'"shell"').rstrip(), Spawn)
    with pytest.raises(ProtocolError, match="confinement.*not a Confinement"):
        protocol.decode(line.replace(b'"userns"', b'"half"').rstrip(), Spawn)
