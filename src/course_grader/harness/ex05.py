"""ex05 in the measuring process: the student's timing code, watched by the grader's own clock.

Entry ``run(payload)`` calls the student's allow-listed ``time_and_record(fn, x, backend)``
three times, under conditions the grader arranges:

1. ``inductor`` with an FX graph cache that is empty (a private cache directory;
   already compiled C++ kernels may be reused, the FX graph cannot),
2. ``inductor`` again on that same directory, now warm,
3. ``eager``, a backend that generates no code.

``fn`` is a wrapper that timestamps every eager call with ``time.perf_counter``;
while the student's function runs, ``torch.compile`` returns a wrapper that does
the same for every compiled call and records the Dynamo graphs compiled and the
FX graph cache hits and misses during the call, and the arguments compile got.
A call ``counts`` as a timing of the workload only if it is a call of ``fn`` (or
of ``torch.compile(fn)``) on the ``x`` the grader passed: timing a smaller input,
or compiling something else, cannot lower the floor a reported figure must clear.
The reply is the student's report (JSON data only) next to those records; the
trusted side checks one against the other.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
from torch._dynamo.utils import counters

from .allowlist import AllowList, load_checked
from .common import error_text, fresh_compiler, restore_global_state

FUNCTION = "time_and_record"
ALLOWED = AllowList(provided=frozenset({"torch", "time"}), imports=frozenset({"time"}),
                    dotted=frozenset({"torch._dynamo.reset", "torch._dynamo.utils.counters"}))
CONDITIONS = (("cold", "inductor"), ("warm", "inductor"), ("eager", "eager"))
SHAPE = (256, 1024)
COPY_LIMIT_BYTES = 256 << 20
NOT_COPIED = ("fxgraph", "aotautograd", "locks", "precompiled_headers")  # headers: 158 MB each, found by path
REPORT_KEYS = {"backend", "eager_first_s", "eager_fastest_s", "compiled_first_s", "compiled_fastest_s",
               "cache", "speedup", "boundary"}
MAX_TEXT = 400


def fused(x):
    return torch.sin(x) * torch.cos(x) + 0.5 * torch.tanh(x)


def copy_compiled_kernels(target: Path) -> None:
    """Copy into ``target`` the host cache's compiled C++ (kernels, ISA probes) if small enough, never its FX graphs."""
    base = Path(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or
                torch._inductor.runtime.cache_dir_utils.default_cache_dir())
    try:
        entries = [p for p in base.iterdir() if p.name not in NOT_COPIED]
        size = sum(f.stat().st_size for p in entries for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
        if size <= COPY_LIMIT_BYTES:
            for p in entries:
                (shutil.copytree if p.is_dir() else shutil.copy2)(p, target / p.name)
    except OSError:
        pass  # no usable host cache: the C++ kernel is compiled too, which only takes longer


def _private_cache_dir() -> str:
    """A new inductor cache directory holding ``copy_compiled_kernels``' copy."""
    target = tempfile.mkdtemp(prefix="ex05-inductor-")
    copy_compiled_kernels(Path(target))
    return target


def _cache_counts() -> tuple[int, int]:
    return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]


def _json_value(value, depth: int = 0):
    """The student's report as JSON data: exact primitive types, short strings, nothing else."""
    if value is None or type(value) in (bool, int, str):
        return value[:MAX_TEXT] if type(value) is str else value
    if type(value) is float:
        return value if value == value and abs(value) != float("inf") else repr(value)
    if depth < 3 and type(value) in (list, tuple):
        return [_json_value(v, depth + 1) for v in list(value)[:20]]
    if depth < 3 and type(value) is dict:
        return {str(k)[:60]: _json_value(v, depth + 1) for k, v in list(value.items())[:20]}
    return {"unsupported type": type(value).__name__}


def _same_input(args: tuple, kwargs: dict, x: torch.Tensor) -> bool:
    """Only calls on the ``x`` the grader passed (or an equal copy) count as timings of this workload."""
    if kwargs or len(args) != 1 or not isinstance(args[0], torch.Tensor):
        return False
    a = args[0]
    return a is x or (a.shape == x.shape and a.dtype == x.dtype and a.device == x.device and torch.equal(a, x))


class _Watch:
    """The grader's records of one condition."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.compile_calls: list[dict] = []
        self.origin = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.origin

    def eager(self, real, x):
        def fn(*args, **kwargs):
            t0 = self.now()
            out = real(*args, **kwargs)
            self.events.append({"kind": "eager", "t0": t0, "t1": self.now(), "counts": _same_input(args, kwargs, x)})
            return out
        return fn

    def compile(self, real_compile, eager_wrapper, real_fn, x):
        def recording_compile(model=None, **kwargs):
            if model is None:  # torch.compile(backend=...)(fn)
                return lambda m: recording_compile(m, **kwargs)
            of_fn = model is eager_wrapper or model is real_fn
            if of_fn:
                self.compile_calls.append({k: _json_value(v) for k, v in kwargs.items()
                                           if k in ("backend", "fullgraph", "dynamic", "mode")})
            compiled = real_compile(real_fn if model is eager_wrapper else model, **kwargs)

            def call(*args, **kw):
                frames, (hits, misses) = counters["stats"]["unique_graphs"], _cache_counts()
                t0 = self.now()
                out = compiled(*args, **kw)
                t1 = self.now()
                new_hits, new_misses = _cache_counts()
                self.events.append({"kind": "compiled", "t0": t0, "t1": t1,
                                    "counts": of_fn and _same_input(args, kw, x),
                                    "frames": counters["stats"]["unique_graphs"] - frames,
                                    "hits": new_hits - hits, "misses": new_misses - misses})
                return out
            return call
        return recording_compile


def _one(source: str, backend: str) -> dict:
    watch = _Watch()
    x = torch.randn(*SHAPE, generator=torch.Generator().manual_seed(0))
    eager_fn = watch.eager(fused, x)
    # Checked before torch.compile is swapped for the recording wrapper: the allow-list resolves
    # `torch.compile` to torch's own function (the wrapper is the grader's, not torch's).
    fn = load_checked(source, FUNCTION, ALLOWED, {"torch": torch, "time": time})
    real_compile = torch.compile
    torch.compile = watch.compile(real_compile, eager_fn, fused, x)
    try:
        start = watch.now()
        try:
            report, error = fn(eager_fn, x, backend), None
        except Exception as exc:  # noqa: BLE001
            report, error = None, error_text(exc)
        end = watch.now()
    finally:
        torch.compile = real_compile
    return {"backend": backend, "error": error, "report": _json_value(report), "start": start, "end": end,
            "events": watch.events[:2000], "compile_calls": watch.compile_calls[:20]}


def run(payload: dict) -> dict:
    try:
        load_checked(payload["source"], FUNCTION, ALLOWED, {"torch": torch, "time": time})
    except Exception as exc:  # noqa: BLE001
        return {"load_error": error_text(exc), "runs": {}}
    cache_dir = _private_cache_dir()
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    torch._inductor.config.compile_threads = 1  # no worker pool inside the sandbox
    runs = {}
    try:
        for condition, backend in CONDITIONS:
            restore_global_state()
            fresh_compiler()
            runs[condition] = _one(payload["source"], backend)
    finally:
        if saved is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved
        shutil.rmtree(cache_dir, ignore_errors=True)
    return {"load_error": None, "runs": runs}
