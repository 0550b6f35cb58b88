"""The stopwatch itself: the stand-in that records every call made of a function, and what
``torch.compile`` was asked of it (what a record holds, and why: the package docstring).
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import time

import torch

from ..measurement.records import MAX_CALLS, MAX_COMPILES, MAX_RAISED  # a timeline's bounds, which records validates

CHANGED_DURING_CALL = 0    # a call's "threads" when the thread count was changed while it ran
MAX_KEPT_INPUTS = 64       # distinct tensors a stopwatch holds on to, to check once the routine has returned
SAMPLED = 256              # elements of a tensor argument a call reads (torch.take, about 2 us: inside the timer)
PLACES = 16                # random sets of places to read them at, drawn before the routine runs, used in turn


class Stopwatch:
    """Records calls of ``fn`` made through :attr:`stand_in` (see the module docstring)."""

    def __init__(self, fn):
        from ..measurement.run import compile_stats
        from ..measurement.spy import describe_arg

        epoch = time.perf_counter()
        calls: list[dict] = []
        compiles: list[dict] = []
        inputs = _Inputs()
        self._calls, self._compiles, self._epoch, self._inputs = calls, compiles, epoch, inputs

        def record(enter: float, kind: str, index: int | None, args, kwargs, run):
            # enter is the stand-in's first reading, exit its last: a timer around the stand-in reads at least that
            before = compile_stats()
            threads = torch.get_num_threads()   # outside the timed span, as the counters are
            grad = torch.is_grad_enabled()
            seen = inputs.note(args)
            raised = None
            start = time.perf_counter()
            try:
                return run()
            except BaseException as exc:   # recorded, and raised on as it was
                raised = type(exc).__name__
                raise
            finally:
                end = time.perf_counter()
                after = compile_stats()
                if torch.get_num_threads() != threads:
                    threads = CHANGED_DURING_CALL
                if len(calls) < MAX_CALLS:
                    call = {"kind": kind, "compile": index, "enter": enter, "start": start - epoch,
                            "end": end - epoch, "args": [describe_arg(a) for a in args[:8]], "keywords": len(kwargs),
                            "threads": threads, "grad": grad, "given": None,
                            "raised": None if raised is None else _exception_name(raised),
                            **{k: max(0, after[k] - before[k]) for k in after}}
                    calls.append(call)
                    inputs.seen.append(seen)
                    call["exit"] = time.perf_counter() - epoch

        def stand_in(*args, **kwargs):
            enter = time.perf_counter()
            return record(enter - epoch, "eager", None, args, kwargs, lambda: fn(*args, **kwargs))

        def compiled_of(compiled, index: int):
            def compiled_stand_in(*args, **kwargs):
                enter = time.perf_counter()
                return record(enter - epoch, "compiled", index, args, kwargs, lambda: compiled(*args, **kwargs))
            return compiled_stand_in

        def compile_hook(real_compile):
            def hooked_compile(model=None, **options):
                if model is None:   # used as a decorator factory: torch.compile(backend=...)(f)
                    return lambda m: hooked_compile(m, **options)
                if model is not stand_in:
                    return real_compile(model, **options)
                backend = options.get("backend", "inductor")
                if len(compiles) < MAX_COMPILES:
                    compiles.append({"backend": backend if isinstance(backend, str) else "<callable>",
                                     "fullgraph": bool(options.get("fullgraph", False)),
                                     "dynamic": options.get("dynamic") if options.get("dynamic") in (None, True, False)
                                     else "<other>",
                                     "mode": options.get("mode") if isinstance(options.get("mode"), str) else None})
                return compiled_of(real_compile(fn, **options), len(compiles) - 1)
            # it stands where torch.compile stands, under torch.compile's name (the allow-list's re-check in
            # the measuring child resolves `torch.compile` to it)
            return functools.update_wrapper(hooked_compile, real_compile)

        stand_in.__name__ = stand_in.__qualname__ = getattr(fn, "__name__", "timed")
        self.stand_in = stand_in
        self._compile_hook = compile_hook

    @contextlib.contextmanager
    def hooked(self, given: tuple | None = None):
        """``torch.compile`` of the stand-in compiles ``fn`` and hands back a recording function.

        ``given``: the arguments the routine is called with, before it runs; its tensors are the ones every call
        of the stand-in must be made on (each call's ``given`` in :meth:`timeline`; None: not checked)."""
        if given is not None:
            self._inputs.give(given)
        real = torch.compile
        torch.compile = self._compile_hook(real)
        try:
            yield self
        finally:
            torch.compile = real

    def timeline(self) -> dict:
        """What was seen, as data: ``{"calls": [...], "compiles": [...], "end": seconds}``. Ask once the routine
        has returned: each call's ``given`` is decided now (True, False, or None when no ``given`` was told)."""
        end = time.perf_counter() - self._epoch
        given = self._inputs.verdicts()
        return {"calls": [dict(c, given=g) for c, g in zip(self._calls, given, strict=True)],
                "compiles": [dict(c) for c in self._compiles], "end": end}


def _exception_name(name: str) -> str:
    return name[:MAX_RAISED] if name.isidentifier() else "Exception"


class _Inputs:
    """The tensors a routine was given (a copy of each, taken before it ran) and the tensors each call was made on.

    At call time only what is cheap is noted (about 2 us a tensor, inside the routine's timer): the tensor
    (held, so that its ``id`` is not reused), its ``_version`` and ``data_ptr()``, and ``SAMPLED`` of its
    elements at places drawn at random when the routine was given its tensors (``torch.take``): a write that
    the version counter does not see, made before the call and undone after it, shows there. :meth:`verdicts`
    compares, once the routine has returned."""

    def __init__(self):
        self.given: list[tuple] | None = None   # (tensor, a copy of its values, _version, data_ptr, places) each
        self.kept: list[torch.Tensor] = []
        self.index: dict[int, int] = {}
        self.pool_of: list[int | None] = []     # per kept tensor: the given tensor it is checked against
        self.seen: list[tuple] = []             # per recorded call, per tensor: what :meth:`note` noted, or None
        self.calls = 0

    def give(self, args: tuple) -> None:
        draw = torch.Generator().manual_seed(secrets.randbits(62))   # not torch's own: the routine may seed that
        with torch.no_grad():
            self.given = [(a, a.detach().clone(), a._version, a.data_ptr(),
                           [torch.randint(0, a.numel(), (SAMPLED,), generator=draw) for _ in range(PLACES)]
                           if a.numel() else [])
                          for a in args if isinstance(a, torch.Tensor)]

    def note(self, args: tuple) -> tuple:
        out = []
        turn = self.calls % PLACES
        self.calls += 1
        for a in args[:8]:
            if isinstance(a, torch.Tensor):
                try:
                    k = self.index.get(id(a))
                    if k is None:
                        if len(self.kept) >= MAX_KEPT_INPUTS:
                            out.append(None)
                            continue
                        k = self.index[id(a)] = len(self.kept)
                        self.kept.append(a)
                        self.pool_of.append(self._pool(a))
                    g = self.pool_of[k]
                    places = None if g is None else self.given[g][4]
                    sample = torch.take(a.detach() if a.requires_grad else a, places[turn]) if places else None
                    out.append((k, a._version, a.data_ptr(), turn, sample))
                except Exception:  # noqa: BLE001 - a tensor without memory (meta, sparse): not one of those given
                    out.append(None)
        return tuple(out)

    def _pool(self, a: torch.Tensor) -> int | None:
        """The given tensor ``a`` is checked against: itself, or the first of its number of elements (a copy)."""
        if self.given is None:
            return None
        found = next((i for i, g in enumerate(self.given) if g[0] is a), None)
        if found is None:
            found = next((i for i, g in enumerate(self.given) if g[0].numel() == a.numel()), None)
        return found

    def verdicts(self) -> list[bool | None]:
        """For each recorded call: its tensors were the given ones as given, or unchanged copies of them; None
        when the stopwatch was not told what the routine was given."""
        if self.given is None:
            return [None] * len(self.seen)
        with torch._C.DisableTorchFunctionSubclass(), torch.no_grad():
            if not all(t._version == v and _same_memory(t, p) and _equal(t, copy) for t, copy, v, p, _ in self.given):
                return [False] * len(self.seen)   # the routine changed what it was given
            ok = [self._kept_ok(t, g) for t, g in zip(self.kept, self.pool_of, strict=True)]
            return [all(n is not None and ok[n[0]](n[1], n[2]) and self._sampled_ok(n) for n in seen)
                    for seen in self.seen]

    def _kept_ok(self, t: torch.Tensor, g: int | None):
        """``(version, data_ptr) at the call -> whether the call was made on given values``, for one kept tensor."""
        if g is None:
            return lambda v, p: False
        given, copy, version, ptr, _ = self.given[g]
        if t is given:   # the very tensor the routine was given: as it was given (and, checked above, still is)
            return lambda v, p: v == version and p == ptr
        # another tensor (x.clone(), x.detach()): equal to the one given, and not written since the call
        same = _equal(t, copy)
        return lambda v, p: same and t._version == v and _same_memory(t, p)

    def _sampled_ok(self, noted: tuple) -> bool:
        k, _, _, turn, sample = noted
        g = self.pool_of[k]
        if g is None:
            return False
        _, copy, _, _, places = self.given[g]
        return sample is None if not places else sample is not None and _equal(sample, torch.take(copy, places[turn]))


def _same_memory(t: torch.Tensor, ptr: int) -> bool:
    try:
        return t.data_ptr() == ptr
    except Exception:  # noqa: BLE001 - no memory of its own any more
        return False


def _equal(t: torch.Tensor, copy: torch.Tensor) -> bool:
    """The same form (dtype, shape, device, strides) and the same values (NaN equal to NaN)."""
    try:
        if t.dtype != copy.dtype or t.shape != copy.shape or t.device != copy.device or t.stride() != copy.stride():
            return False
        if torch.equal(t, copy):
            return True
        return bool(t.is_floating_point() and ((t == copy) | (t.isnan() & copy.isnan())).all())
    except Exception:  # noqa: BLE001 - not comparable: not the same values
        return False


@contextlib.contextmanager
def hooked(stopwatches: list[Stopwatch], given: tuple | None = None):
    """Every stopwatch's hook, nested (normally there is one); ``given``: the routine's arguments
    (:meth:`Stopwatch.hooked`)."""
    with contextlib.ExitStack() as stack:
        for s in stopwatches:
            stack.enter_context(s.hooked(given))
        yield
