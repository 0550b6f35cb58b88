"""What an exercise's test cells use: ``student``, ``reference``, ``code``, ``spy`` and ``passed``.

A test cell asks questions of the student's answers through ``student`` and of the course's own
functions through ``reference``. In the student's notebook both are a :class:`Namespace` over
the notebook's own variables, so a public test cell is the student's self-check. At grading the
grader runs the same cell in its own process, where ``student`` reaches the submission only
through a sandboxed child and every answer comes back as data, and ``reference`` runs the
course's setup cells in a child that runs no student code (``course_grader.verdict.remote``).

Every method returns the records of ``compile_course.measurement``; both sides read them with the
same ``from_data``, so what a test sees in the notebook and at grading has one form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from . import measurement as measure
from .api_modules import is_test_api_module
from .measurement import AnswerError, CallResult, ReplyError, Run, Timing

__all__ = ["AnswerError", "CallResult", "Namespace", "ReplyError", "Run", "Timing", "answer_fn", "code",
           "disagreements", "expect_agreement", "expect_like_reference", "is_test_api", "passed", "replay", "spy",
           "stopwatch"]

# Modules whose objects are the test API (``api_modules``, by name, with their submodules): a measured function
# never holds one (at grading, the measuring child drops them from the function's namespace;
# ``course_grader.verdict.shipping`` from its allow-list).


def passed(message: str) -> None:
    """The success line a test cell ends with (at grading, the test's message)."""
    print(f"✓ {message}")


@dataclass(frozen=True)
class code:  # noqa: N801 - reads as a function in a test cell: code("make_block()")
    """An argument that is a Python expression, evaluated where the function under test runs.

    Use it for objects that cannot travel as data: ``code("make_block()")``,
    ``code("torch.compile(gate, backend='eager')")``, or a function the test cell defines
    (``code("dropped_branch")``). Names resolve in the setup cells, then in the test cell's
    own top-level ``def``s and ``class``es, which the grader sends along without their names,
    comments and docstrings.
    """

    expression: str


@dataclass(frozen=True)
class answer_fn:  # noqa: N801
    """An argument that is the student's function ``name`` itself, for a setup function that must hold
    it: ``student.call("serve", answer_fn("scaled_block_fixed"), x, w)`` calls the setup function
    ``serve`` with the answer in that place, in the student's process (at grading, the sandboxed child
    that runs the answer). For what a test cell cannot do itself around the answer: compile it, change
    a module global between two calls, run ``torch.library.opcheck`` on its ops. Only ``call`` and
    ``call_each`` take it; the answer's globals are ``fn.__globals__`` (at grading not the setup cells')."""

    name: str


@dataclass(frozen=True)
class spy:  # noqa: N801
    """An argument that stands in for the function ``name``: it calls it (compiled, backend ``"eager"``), and
    records each call, checked against what the calls compiled (``measurement.Spy.records``).

    The records (dtype, shape, requires_grad and dynamic-shape marks of each tensor argument, and the
    grad mode) come back in ``CallResult.spied``; replay them with ``reference.compile(name,
    *replay(result.spied))`` to see what those calls compile.
    """

    name: str


@dataclass(frozen=True)
class stopwatch:  # noqa: N801
    """An argument that stands in for the function ``name`` and times every call made of it, eager or
    through ``torch.compile`` (``compile_course.stopwatch``): the record comes back in ``CallResult.timeline``."""

    name: str


def replay(spied: list[dict] | None) -> list[tuple]:
    """Fresh argument tuples like the recorded ones (random values; same dtypes, shapes and marks)."""
    return [measure.make_spied_args(call, seed=i)[0] for i, call in enumerate(spied or [])]


class Namespace:
    """The questions a test can ask of the functions and values in one namespace (a notebook's ``globals()``)."""

    def __init__(self, namespace: dict):
        self._ns = namespace

    # -- data answers
    def answer(self, name: str) -> Any:
        """The value of ``name``: data only (numbers, text, None, lists, tuples, dicts, tensors)."""
        if name not in self._ns:
            raise AnswerError(f"{name} is not defined: replace the `raise NotImplementedError(...)` line with "
                              f"`{name} = ...` and run that cell")
        try:
            return measure.from_data(measure.to_data(self._ns[name]))
        except (ReplyError, RecursionError, ValueError) as exc:
            raise AnswerError(f"{name} is not a plain value: {exc}") from None

    # -- functions
    def _function(self, name: str):
        fn = self._ns.get(name)
        if not callable(fn):
            raise AnswerError(f"no function {name}: replace the `raise NotImplementedError(...)` line with "
                              "your code and run that cell")
        return fn

    def _args(self, args: tuple, watches: list | None = None) -> tuple[tuple, list]:
        spies = []
        out = []
        for a in args:
            if isinstance(a, stopwatch):
                from .stopwatch import Stopwatch

                w = Stopwatch(self._ns[a.name])
                if watches is not None:
                    watches.append(w)
                out.append(w.stand_in)
                continue
            if isinstance(a, code):
                out.append(eval(a.expression, self._ns))  # noqa: S307 - the test's own expression, in its notebook
            elif isinstance(a, answer_fn):
                out.append(self._function(a.name))
            elif isinstance(a, spy):
                s = measure.Spy(self._ns[a.name])
                spies.append(s)
                out.append(s.stand_in)
            else:
                out.append(a)
        return tuple(out), spies

    def call(self, name: str, *args, grad: bool = False, alone: bool = False) -> CallResult:
        """``name(*args)`` once, eagerly. ``grad=True`` adds the gradients of the tensor arguments that require grad.

        ``alone=True``: at grading, asked of a child of its own, in which nothing ran before (no earlier
        question's load of the answer, trace or call): to check an op as torch's own tests do, before
        anything traces it. Here, in the notebook, it runs in the notebook's process, as any call does."""
        fn = self._function(name)
        watches: list = []
        real, spies = self._args(args, watches)
        result = _timed_call(fn, real, grad, watches)
        if spies:
            result.spied = [c for s in spies for c in s.records()]
        return CallResult.from_data(result.to_data())

    def call_each(self, name: str, *calls: tuple, grad: bool = False) -> list[CallResult]:
        """``name(*args)`` eagerly for each argument tuple of ``calls``: one :class:`CallResult` a call."""
        fn = self._function(name)
        results = []
        for c in calls:
            watches: list = []
            real, _ = self._args(tuple(c), watches)
            results.append(CallResult.from_data(_timed_call(fn, real, grad, watches).to_data()))
        return results

    def compile(self, name: str, *calls: tuple, backend: str = "eager", fullgraph: bool = False,
                dynamic: bool | None = None, stance: str | None = None, grad: bool = False, like=None) -> Run:
        """``torch.compile(name, ...)`` once, called on each argument tuple of ``calls`` in turn.

        ``like``: the reference the function must agree with. At grading, a graph the student's
        process reports is then also re-run on new inputs and compared with ``like``; give it
        whenever a test awards points for a capture (here, in the notebook, nothing needs checking).
        """
        return self._compile(name, calls, backend, fullgraph, dynamic, stance, grad, fresh=False)[0]

    def compile_each(self, name: str, *calls: tuple, backend: str = "eager", fullgraph: bool = False,
                     dynamic: bool | None = None, stance: str | None = None, grad: bool = False,
                     like=None) -> list[Run]:
        """Like :meth:`compile`, compiled afresh (Dynamo's caches emptied) for each call: one :class:`Run` a call."""
        return self._compile(name, calls, backend, fullgraph, dynamic, stance, grad, fresh=True)

    def _compile(self, name, calls, backend, fullgraph, dynamic, stance, grad, fresh) -> list[Run]:
        fn = self._function(name)
        real = [self._args(tuple(c))[0] for c in calls]
        runs = measure.compile_run(fn, real, backend=backend, fullgraph=fullgraph, dynamic=dynamic, stance=stance,
                                   grad=grad, fresh=fresh)
        return [Run.from_data(r.to_data()) for r in runs]

    def time(self, name: str, *args, backend: str | None = None, calls: int = 20, now: bool = False) -> Timing:
        """Wall-clock time of ``name(*args)``: the first call, and the fastest of ``calls`` steady ones.
        With ``backend``, of ``torch.compile(name, backend=backend)`` (compiled afresh, so the first call compiles).

        ``now=True``: at grading, measured when asked, never taken from an earlier equal question (a
        grading run answers equal questions once): to compare with figures measured moments before,
        under the same load."""
        fn = self._function(name)
        real, _ = self._args(args)
        return Timing.from_data(measure.time_calls(fn, real, backend=backend, calls=calls).to_data())


Student = Namespace


def _timed_call(fn, args: tuple, grad: bool, watches: list) -> CallResult:
    """``call_one``, with any stopwatch's ``torch.compile`` hook on, and the first stopwatch's record."""
    from .stopwatch import hooked

    with hooked(watches, args):   # the routine's tensors, kept as given before it runs
        result = measure.call_one(fn, args, grad=grad)
    if watches:
        result.timeline = watches[0].timeline()
    return result


def is_test_api(value: Any) -> bool:
    """Whether ``value`` belongs to the test API (a :class:`Namespace`, ``code``, ``spy``, ``passed``,
    a recorder, or any function or class of this module or of ``measurement``), or is a way out of an
    allow-list (``eval``, ``exec`` and the other builtins a test namespace holds)."""
    import builtins
    import types

    from .stopwatch import Stopwatch

    if isinstance(value, (Namespace, code, spy, stopwatch, answer_fn, measure.Spy, Stopwatch)):
        return True
    if isinstance(value, types.ModuleType):
        return is_test_api_module(value.__name__) or value is builtins
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        if is_test_api_module(getattr(value, "__module__", None) or ""):
            return True
        return getattr(builtins, getattr(value, "__name__", ""), None) is value
    return False


def disagreements(reference, cases: list[tuple[str, tuple]], results: list[CallResult], *,
                  grad: bool = False) -> list[str]:
    """Where ``results`` differ from ``reference`` called eagerly on the same ``cases`` (label, args).

    Outputs are compared by ``compile_course.comparison.compare_tensors`` (dtype, shape, NaN,
    infinities and the sign of zero exact; float rounding within the course's tolerances);
    gradients the same way, except that a zero's sign is not compared (the course's rule).
    """
    from .comparison import compare_tensors

    problems = []
    for (label, args), got in zip(cases, results, strict=True):
        want = measure.call_one(reference, tuple(_fresh(a) for a in args), grad=grad)
        if want.error:
            raise RuntimeError(f"the reference raised on {label}: {want.error}")
        if not got.ok:
            problems.append(f"{label}: {got.error}")
            continue
        if not isinstance(got.value, torch.Tensor):
            problems.append(f"{label}: returned {got.value!r}, not a tensor")
            continue
        verdict = compare_tensors(want.value, got.value)
        if not verdict.ok:
            problems.append(f"{label}: output {verdict.text}")
            continue
        if grad:
            wanted, gotten = want.grads or [], got.grads or []
            if len(wanted) != len(gotten):
                problems.append(f"{label}: no gradient flows back to the input")
                continue
            for w, g in zip(wanted, gotten, strict=True):
                if w is None or g is None:
                    if (w is None) != (g is None):
                        problems.append(f"{label}: a gradient is missing or unexpected")
                    continue
                verdict = compare_tensors(w, g, signed_zeros=False)
                if not verdict.ok:
                    problems.append(f"{label}: gradient {verdict.text}")
    return problems


def expect_agreement(reference, cases: list[tuple[str, tuple]], results: list[CallResult], what: str, *,
                     grad: bool = False) -> None:
    """Fails, listing up to six cases, where :func:`disagreements` finds any."""
    problems = disagreements(reference, cases, results, grad=grad)
    shown = "\n".join(f"  {p}" for p in problems[:6])
    more = f"\n  ... and {len(problems) - 6} more" if len(problems) > 6 else ""
    assert not problems, f"{what}: {len(problems)} case(s) disagree with the reference:\n{shown}{more}"


def expect_like_reference(target, name: str, reference, cases: list[tuple[str, tuple]], what: str,
                          *, eager: bool = True, **compile_options) -> None:
    """``target``'s function ``name`` agrees with ``reference`` on every case, compiled afresh for each
    case with ``compile_options`` (``backend="eager"`` unless given) and, with ``eager``, called eagerly.

    Gradients are compared for the cases whose tensor arguments require grad.
    """
    for grad in (True, False):
        group = [c for c in cases if any(isinstance(a, torch.Tensor) and a.requires_grad for a in c[1]) == grad]
        if not group:
            continue
        runs = target.compile_each(name, *(args for _, args in group), grad=grad, like=reference,
                                   **compile_options)
        expect_agreement(reference, group, [r.calls[0] for r in runs], f"compiled, {what}", grad=grad)
        if eager:
            results = target.call_each(name, *(args for _, args in group), grad=grad)
            expect_agreement(reference, group, results, f"called eagerly, {what}", grad=grad)


def _fresh(a):
    if isinstance(a, torch.Tensor):
        return a.detach().clone().requires_grad_(a.requires_grad)
    return a
