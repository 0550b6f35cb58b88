"""What an exercise's ``grade()`` receives and returns.

``GradeContext`` hands the trusted verdict code the student's cell sources (by
course id) and one way to reach a sandboxed measuring process. It never runs
student code itself: data answers are parsed with ``ast.literal_eval``, code
answers are cut out of their cell and checked by ``course_grader.harness.allowlist``
before anything can send them to a measuring process.

What it does not do: decide. The exercise's test cells (``course_grader.verdict.testcells``) compare
what it gets here with references it computes itself.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# AnswerError: the student's answer cannot be used (missing, not a literal, not allowed); its text is for
# the student. One class with the test API's, an AssertionError: a test cell that meets it fails with it.
from compile_course.measurement import AnswerError  # noqa: F401
from course_grader.errors import AllowListError
from course_grader.harness.allowlist.extract import extract_function
from course_grader.harness.allowlist.rules import AllowList, parse_source

MAX_LITERAL_NODES = 2_000
MAX_LITERAL_DEPTH = 8


MAX_EXCERPT = 60


def excerpt(text: object, limit: int = MAX_EXCERPT) -> str:
    """A short, printable-ASCII excerpt of text a measured run produced (an exception message).

    Feedback is grader-made text; anything that came out of student code is shown
    only through this: at most ``limit`` characters, other characters replaced by ``?``.
    """
    flat = "".join(c if " " <= c <= "~" else "?" for c in str(text))
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def shown(value: object, vocabulary: tuple[str, ...] = ()) -> str:
    """How a value a student reported is named in feedback: numbers, constants and the grader's
    own words (``vocabulary``) as they are, anything else only by its kind (a string's text is
    never echoed)."""
    if value is None or type(value) is bool or (type(value) is str and value in vocabulary):
        return repr(value)
    if type(value) in (int, float):
        return excerpt(repr(value), 30)
    if type(value) is str:
        return f"a string of {len(value)} characters"
    return f"a value of type {excerpt(type(value).__name__, 30)}"




@dataclass(frozen=True)
class TestVerdict:
    """One graded cell's result. The platform drops ``message`` for hidden tests."""

    __test__ = False  # not a pytest class

    test_id: str
    passed: bool
    message: str


@dataclass
class GradeContext:
    """The student's cells and a measuring process, for one attempt at one exercise.

    ``cells``: ``{course id: the student's cell source}`` for the cells the
    submission has (the platform has already restored locked and test cells).
    ``measure(entry, payload)``: runs ``course_grader.harness.<HARNESS>.<entry>(payload)``
    in a fresh sandboxed child and returns its JSON reply (or raises ``SandboxFault``).
    """

    exercise: Any
    cells: dict[str, str]
    measure_fn: Callable[[str, dict], dict] = field(repr=False)

    def solution_source(self, cell_id: str) -> str:
        """The student's text of one cell; ``AnswerError`` if the submission lacks it."""
        source = self.cells.get(cell_id)
        if not isinstance(source, str):
            raise AnswerError(f"{cell_id}: the answer cell is missing from your notebook")
        return source

    def literal(self, cell_id: str, name: str) -> Any:
        """The value of ``name = <literal>`` in the cell, parsed, never executed.

        The assignment must be a plain literal (numbers, strings, None, True/False,
        lists, tuples, dicts, sets): a value computed by code is not an answer.
        """
        source = self.solution_source(cell_id)
        try:
            tree = parse_source(source, cell_id)
        except AllowListError as exc:
            raise AnswerError(str(exc)) from None
        found = [node for node in tree.body
                 if (isinstance(node, ast.Assign) and len(node.targets) == 1
                     and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name)
                 or (isinstance(node, ast.AnnAssign) and node.value is not None
                     and isinstance(node.target, ast.Name) and node.target.id == name)]
        if not found:
            raise AnswerError(f"{cell_id}: no `{name} = ...` assignment at the top level of the cell "
                              "(replace the `raise NotImplementedError(...)` line with it)")
        value = found[-1].value  # as in Python, the last assignment is the value
        _check_literal_size(value, cell_id, name)
        try:
            return ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise AnswerError(f"{cell_id}: `{name}` must be written as a literal value (numbers, strings, "
                              "None, lists, dicts), not computed by code") from None

    def function_source(self, cell_id: str, name: str, allowed: AllowList) -> str:
        """Source of ``def name`` from the cell (plus the helpers and literal constants it uses), allow-listed."""
        source = self.solution_source(cell_id)
        try:
            return extract_function(source, name, allowed, where=cell_id)
        except AllowListError as exc:
            raise AnswerError(str(exc)) from None

    def measure(self, entry: str, payload: dict) -> dict:
        """``course_grader.harness.<this exercise's HARNESS>.<entry>(payload)`` in a sandboxed child."""
        return self.measure_fn(entry, payload)


def _check_literal_size(node: ast.AST, cell_id: str, name: str) -> None:
    count = 0
    stack = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        count += 1
        if isinstance(current, ast.Constant) and isinstance(current.value, (str, bytes)):
            count += len(current.value) // 100   # a long text weighs like many items
        if count > MAX_LITERAL_NODES or depth > MAX_LITERAL_DEPTH:
            raise AnswerError(f"{cell_id}: `{name}` is far larger or deeper than any answer to this question")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
