"""``student`` and ``reference`` at grading: the test cell's questions, answered by sandboxed children.

A test cell runs in the grader's process (``course_grader.verdict.testcells``). What it asks of
``student`` goes to a fresh sandboxed child (``course_grader.harness.child.serve``) that runs
the exercise's setup cells and the student's function, cut out of its cell and allow-listed, and
replies data. ``reference`` asks the same of a child that runs the setup cells only. The child
sees the setup cells, the function and the test's arguments; never a test's source, names,
expected values or the solution's answers (what is sent besides the question, and how it is cut out:
``course_grader.verdict.shipping``).

Verify, don't believe: the questions and replies are typed in ``course_grader.wire.payloads`` (the
child reads the same types); a reply's shape is checked there (``read_serve_reply``,
``read_replay_reply``) and its records by ``compile_course.primitives``'s ``from_data``, so a malformed
reply fails the test with a message, and a compile run that claims
one graph for a call is re-checked: the graph (validated here, torch ops only) is re-run on the
test's own inputs in a child that runs no student code, and must give the reported output and
gradients. A graph that calls the answer's own code (a custom op or ``nonstrict_trace`` function the
answer cell is allowed: ``course_grader.harness.opaque``) is re-run the same way in a child of its
own that loads the answer and nothing else, since those nodes are the answer's.
"""

from __future__ import annotations

import ast
from typing import Any

from compile_course import measurement as measure
from compile_course.measurement import AnswerError, CallResult, ReplyError, Run, Timing
from compile_course.testing import answer_fn, code, spy, stopwatch
from course_grader.errors import AllowListError
from course_grader.harness import opaque
from course_grader.harness.allowlist.extract import extract_function
from course_grader.harness.allowlist.rules import AllowList, parse_source
from course_grader.harness.parsing import parse
from course_grader.verdict import graphcheck
from course_grader.wire.payloads import (
    AllowSpec,
    Arg,
    ArgKind,
    CallOptions,
    CompileOptions,
    FunctionSpec,
    Op,
    PayloadError,
    ReplayAnswerRequest,
    ReplayItem,
    ReplayRequest,
    ServeRequest,
    TimeOptions,
    read_replay_reply,
    read_serve_reply,
)

from .context import AnswerError as ContextAnswerError
from .context import GradeContext, excerpt
from .shipping import Shipped, allowlist_for, setup_names


class RemoteNamespace:
    """The grading side of ``compile_course.testing.Namespace``: same methods, same records."""

    def __init__(self, ctx: GradeContext, *, student: bool):
        self.ctx = ctx
        self.student = student
        self.setup = list(ctx.exercise.setup_sources)
        self.test_source = ""
        self._params: list[str] = []
        self._answer: FunctionSpec | None = None   # the answer function of the last question (source, allow list)
        self._answer_name = ""

    # -- where the student's answers are
    def _solution_cells(self) -> list[tuple[str, str, tuple[str, ...]]]:
        if not self.student:
            return []
        out = []
        for cell in self.ctx.exercise.solutions:
            source = self.ctx.cells.get(cell.course_id)
            if isinstance(source, str):
                out.append((cell.course_id, source, cell.allow))
        return out

    def _defining_cell(self, name: str, kind: type) -> tuple[str, str, tuple[str, ...]] | None:
        found, unreadable = None, None
        for cid, source, allow in self._solution_cells():
            try:
                tree = parse_source(source, cid)
            except AllowListError as exc:
                unreadable = unreadable or exc
                continue
            for node in tree.body:
                if kind is ast.FunctionDef and isinstance(node, ast.FunctionDef) and node.name == name:
                    found = (cid, source, allow)
                elif kind is ast.Assign and isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                        found = (cid, source, allow)
        if found is None and unreadable is not None:   # say why, rather than "not defined"
            raise AnswerError(f"{name} could not be found: {unreadable}")
        return found

    # -- data answers
    def answer(self, name: str) -> Any:
        if not self.student:
            raise ValueError("reference.answer: the course's own values are in the setup cells")
        where = self._defining_cell(name, ast.Assign)
        if where is None:
            raise AnswerError(f"{name} is not defined in your answer cells: replace the "
                              f"`raise NotImplementedError(...)` line with `{name} = ...`")
        try:
            value = self.ctx.literal(where[0], name)
        except ContextAnswerError as exc:  # not a literal, too large or deep: the test fails with its message
            raise AnswerError(str(exc)) from None
        try:
            return measure.from_data(measure.to_data(value))
        except (ReplyError, RecursionError, ValueError, MemoryError) as exc:
            raise AnswerError(f"{name} is not a plain value: {exc}") from None

    # -- functions
    def _function(self, name: str) -> FunctionSpec | None:
        if not self.student:
            if name not in setup_names(self.setup):
                raise ValueError(f"reference: no {name} in the exercise's setup cells")
            return None
        where = self._defining_cell(name, ast.FunctionDef)
        if where is None:
            raise AnswerError(f"no `def {name}(...)` in your answer cells (replace the "
                              "`raise NotImplementedError(...)` line with your code)")
        cid, source, allow = where
        allowed = self._allowlist(allow)
        try:
            checked = extract_function(source, name, allowed, where=cid)
        except AllowListError as exc:
            raise AnswerError(str(exc)) from None
        fn = next(n for n in parse(checked).body if isinstance(n, ast.FunctionDef) and n.name == name)
        self._params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        return FunctionSpec(checked, self._allow_data(allow))

    def _allowlist(self, allow: tuple[str, ...]) -> AllowList:
        return allowlist_for(self.ctx.exercise, allow)

    def _allow_data(self, allow: tuple[str, ...]) -> AllowSpec:
        """What the child needs to build the same allow-list (``harness.allowlist.for_cell``)."""
        allowed = self._allowlist(allow)
        return AllowSpec(sorted(allowed.provided), sorted(allowed.imports), list(allow))

    def _args(self, args: tuple, shipped: Shipped) -> list[Arg]:
        out = []
        for a in args:
            if isinstance(a, code):
                expression, defs = shipped.expression(a.expression)
                out.append(Arg(ArgKind.CODE, expression, defs))
            elif isinstance(a, spy):
                out.append(Arg(ArgKind.SPY, a.name))
            elif isinstance(a, stopwatch):
                out.append(Arg(ArgKind.STOPWATCH, a.name))
            elif isinstance(a, answer_fn):
                out.append(Arg(ArgKind.ANSWER, a.name))
            else:
                out.append(Arg(ArgKind.VALUE, measure.to_data(a)))
        return out

    def _ask(self, op: Op, name: str, args_list: list, options, count: int | None = None):
        """The answer (as data) to one question; ``count``: the results or runs it asks for."""
        caller, name = self._caller(op, name, args_list)
        function = self._function(name)
        self._answer, self._answer_name = function, name
        request = ServeRequest(list(self.setup), function, name, op, args_list, options, caller)
        reply = self.ctx.measure("serve", request.to_data())
        try:
            got = read_serve_reply(reply, op, count)
        except PayloadError as exc:
            raise ReplyError(str(exc)) from None
        if got.load_error is not None:
            raise AnswerError(f"{name} could not be loaded: {excerpt(got.load_error, 200)}")
        return got.answer

    def _caller(self, op: Op, name: str, args_list: list) -> tuple[str | None, str]:
        """``(setup function, answer)`` for a call with ``answer_fn`` arguments (which must all name one
        answer, given to a setup function by ``student``); ``(None, name)`` otherwise."""
        calls = args_list if args_list and all(type(c) is list for c in args_list) else [args_list]
        answers = {a.value for c in calls for a in c if isinstance(a, Arg) and a.kind is ArgKind.ANSWER}
        if not answers:
            return None, name
        if not self.student or len(answers) != 1 or op not in (Op.CALL, Op.CALL_EACH):
            raise ValueError("answer_fn: only student.call and call_each take it, naming one answer function")
        if name not in setup_names(self.setup):
            raise ValueError(f"answer_fn: {name} is not a function of the exercise's setup cells")
        return name, answers.pop()

    def call(self, name: str, *args, grad: bool = False, alone: bool = False) -> CallResult:
        shipped = Shipped(self.test_source)
        return CallResult.from_data(self._ask(Op.CALL, name, self._args(args, shipped),
                                              CallOptions(bool(grad), bool(alone))))

    def call_each(self, name: str, *calls: tuple, grad: bool = False) -> list[CallResult]:
        shipped = Shipped(self.test_source)
        results = self._ask(Op.CALL_EACH, name, [self._args(tuple(c), shipped) for c in calls],
                            CallOptions(bool(grad)), count=len(calls))
        return [CallResult.from_data(r) for r in results]

    def compile(self, name: str, *calls: tuple, backend: str = "eager", fullgraph: bool = False,
                dynamic: bool | None = None, stance: str | None = None, grad: bool = False, like=None) -> Run:
        return self._compile(name, calls, backend, fullgraph, dynamic, stance, grad, fresh=False, like=like)[0]

    def compile_each(self, name: str, *calls: tuple, backend: str = "eager", fullgraph: bool = False,
                     dynamic: bool | None = None, stance: str | None = None, grad: bool = False,
                     like=None) -> list[Run]:
        return self._compile(name, calls, backend, fullgraph, dynamic, stance, grad, fresh=True, like=like)

    def _compile(self, name, calls, backend, fullgraph, dynamic, stance, grad, fresh, like) -> list[Run]:
        shipped = Shipped(self.test_source)
        wire = [self._args(tuple(c), shipped) for c in calls]
        options = CompileOptions(str(backend), bool(fullgraph), dynamic, stance, bool(grad), bool(fresh))
        runs = self._ask(Op.COMPILE, name, wire, options, count=len(calls) if fresh else 1)
        runs = [Run.from_data(r) for r in runs]
        if self.student:
            self._verify(runs, calls, fresh, grad, fullgraph, like)
        return runs

    def _verify(self, runs: list[Run], calls: tuple, fresh: bool, grad: bool, fullgraph: bool, like) -> None:
        """Check every graph a call reports against a re-run of it, in one child that runs no student code.

        * A call reported as one captured graph (or, under ``fullgraph=True``, as reusing the run's
          graph) must get the reported output and gradients when that graph is re-run on the same
          inputs. Under ``fullgraph=True`` a call that succeeded must have a graph.
        * With ``like`` (the test's reference, here in the grader), the graph is also re-run on new
          inputs that the child never saw (same shapes, dtypes and ``requires_grad``, random values
          from a secret seed) and must agree with ``like`` on them: a graph that only replays the
          answers it was asked about (constants) fails.
        """
        per_call = [(run, 0, calls[i]) for i, run in enumerate(runs)] if fresh else \
            [(runs[0], i, c) for i, c in enumerate(calls)]
        seen: dict[int, int] = {}
        current: dict[int, dict] = {}
        items, checks = [], []
        kinds = opaque.kinds_allowed(self._answer.allow.allow) if self._answer else frozenset()
        rng = graphcheck.secret_generator()
        for number, (run, i, args) in enumerate(per_call, 1):
            start = seen.get(id(run), 0)
            count = run.graphs_per_call[i]
            seen[id(run)] = start + count
            if count:
                current[id(run)] = run.graphs[start + count - 1]
            result = run.calls[i]
            if not result.ok:
                continue
            if fullgraph and (count > 1 or id(run) not in current):
                raise ReplyError(f"call {number}: reported as compiled with fullgraph=True, but with "
                                 f"{count} graphs of its own and none before it")
            if count != 1 and not fullgraph:
                continue   # no graph, or several with breaks between them: a claim that earns nothing
            graph = current[id(run)]
            problem = graphcheck.validate(graph, kinds)
            if problem:
                raise ReplyError(f"call {number}: the graph reported for it cannot be checked ({problem})")
            items.append(ReplayItem(graph, [measure.to_data(a) for a in args]))
            checks.append((number, result, False))
            if like is not None:
                new_args = graphcheck.new_inputs(args, rng)
                expected = measure.call_one(like, graphcheck.fresh_copies(new_args), grad=grad)
                if expected.ok:
                    items.append(ReplayItem(graph, [measure.to_data(a) for a in new_args]))
                    checks.append((number, expected, True))
        if not items:
            return
        for (number, wanted, new), one in zip(checks, self._replayed(items, grad), strict=True):
            if new:
                why = graphcheck.disagreement_with_reference(one, wanted, grad)
                if why:
                    raise ReplyError(f"call {number}: its captured graph, re-run on new inputs, {why}: "
                                     "it does not compute what the reference computes")
            else:
                why = graphcheck.disagreement(one, wanted, grad)
                if why:
                    raise ReplyError(f"call {number}: re-running its captured graph {why}")

    def _replayed(self, items: list[ReplayItem], grad: bool) -> list:
        """The re-runs of ``items``, in order: graphs of torch ops in a child that runs no student code,
        graphs that call the answer's own code (``graphcheck.calls_answer``) in one that loads the answer."""
        groups: dict[bool, list[int]] = {False: [], True: []}
        for i, item in enumerate(items):
            groups[graphcheck.calls_answer(item.graph)].append(i)
        replies: list = [None] * len(items)
        for with_answer, indexes in groups.items():
            if not indexes:
                continue
            chosen = [items[i] for i in indexes]
            if with_answer:
                entry = "replay_answer"
                request = ReplayAnswerRequest(chosen, list(self._params), bool(grad), list(self.setup),
                                              self._answer, self._answer_name)
            else:
                entry, request = "replay", ReplayRequest(chosen, list(self._params), bool(grad))
            try:
                found = read_replay_reply(self.ctx.measure(entry, request.to_data()), len(indexes), with_answer)
            except PayloadError as exc:
                raise ReplyError(str(exc)) from None
            for i, one in zip(indexes, found, strict=True):
                replies[i] = one
        return replies

    def time(self, name: str, *args, backend: str | None = None, calls: int = 20, now: bool = False) -> Timing:
        shipped = Shipped(self.test_source)
        nonce = None
        if now:   # a question no earlier one equals: measured now, never answered from the run's cache
            import secrets

            nonce = secrets.token_hex(8)
        timing = self._ask(Op.TIME, name, self._args(args, shipped), TimeOptions(backend, int(calls), nonce))
        return Timing.from_data(timing)
