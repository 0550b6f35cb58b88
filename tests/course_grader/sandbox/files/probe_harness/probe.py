"""Entries the sandbox tests call through ``GradingHost.measure``."""

import os

import torch

from course_grader.wire.protocol import encode_tensor


def listing(payload: dict) -> dict:
    out = {}
    for path in payload["paths"]:
        try:
            out[path] = sorted(os.listdir(path))
        except OSError as exc:
            out[path] = f"{type(exc).__name__}"
    return {"listing": out, "uid": os.getuid(), "pid": os.getpid()}


def double(payload: dict) -> dict:
    x = torch.arange(payload["n"], dtype=torch.float32).reshape(2, -1)
    return {"y": encode_tensor(x * 2)}


def spin(payload: dict) -> dict:
    while True:
        pass


def not_json(payload: dict) -> dict:
    return {"a": {1, 2}}


def boom(payload: dict) -> dict:
    raise ValueError("line one\nline two")


def run_code(payload: dict) -> dict:
    """Run ``payload["code"]``, which leaves a dict of JSON primitives in ``result`` (a syscall probe)."""
    namespace: dict = {}
    exec(payload["code"], namespace)
    return {"result": namespace["result"]}
