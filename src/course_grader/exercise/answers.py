"""Which answers an exercise asks for, and whether a submission gives them (``course check``/``submit``).

What is asked is read from the model answer, as docs/exercise-format.md fixes it: in a
``solution`` cell, a top-level ``NAME = <literal>`` inside a ``### BEGIN SOLUTION`` region is a
value answer, a top-level ``def name`` holding (or inside) a region is a code answer, and a region
that is neither (an investigation loop) is read by no verdict. An ``answer`` cell is free text
that a person reviews.

Whether an answer is given is decided by the grader's own parsers: ``GradeContext.literal`` and
``GradeContext.function_source`` with the allow-list the grader gives that cell
(``shipping.allowlist_for``), so the reason shown here is the one the verdict will give. An answer that still holds
the release's stub, or the answer prompt, is not answered. Nothing here runs student code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from course_grader.errors import AllowListError
from course_grader.harness.allowlist.rules import parse_source
from course_grader.intake.cells import Checked, normalized
from course_grader.verdict.context import AnswerError, GradeContext

from .model import ANSWER_PROMPT, ANSWER_REGION, BEGIN_CODE, END_CODE, CellKind, Exercise, stub_line

LITERAL, FUNCTION, CODE, TEXT = "literal", "function", "code", "text"
ANSWERED, UNANSWERED, INVALID = "ok", "not answered", "not usable"


@dataclass(frozen=True)
class Asked:
    cell_id: str
    kind: str           # LITERAL | FUNCTION | CODE (read by no verdict) | TEXT (reviewed by a person)
    name: str = ""      # the literal's or the function's name
    points: float = 0.0  # TEXT only: the points a person awards

    @property
    def graded(self) -> bool:
        """Read by the grader (a verdict or a reviewer); CODE cells are not."""
        return self.kind != CODE

    def what(self) -> str:
        return {LITERAL: f"`{self.name} = <a literal>`", FUNCTION: f"`def {self.name}(...)`",
                CODE: "your own code (not graded)", TEXT: f"a written answer ({self.points:g} points, reviewed "
                                                          "by a person)"}[self.kind]


@dataclass(frozen=True)
class AnswerState:
    asked: Asked
    status: str         # ANSWERED | UNANSWERED | INVALID
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == ANSWERED


def _region_lines(source: str) -> list[tuple[int, int]]:
    """1-based ``(first, last)`` line of every BEGIN/END SOLUTION region (markers included)."""
    spans, start = [], None
    for n, line in enumerate(source.split("\n"), 1):
        if line.strip() == BEGIN_CODE:
            start = n
        elif line.strip() == END_CODE and start is not None:
            spans.append((start, n))
            start = None
    return spans


def asked(ex: Exercise) -> list[Asked]:
    """What each solution and answer cell of ``ex`` asks for, in notebook order (for a released copy,
    which holds no model answer, as the release record says)."""
    out: list[Asked] = []
    if ex.from_release:
        recorded = list(ex.record.asked if ex.record else ())
        for cell in ex.cells:
            if cell.kind is CellKind.ANSWER:
                out.append(Asked(cell.course_id, TEXT, points=cell.points))
            elif cell.kind is CellKind.SOLUTION:
                out += [Asked(a.cell, a.kind, a.name) for a in recorded if a.cell == cell.course_id] \
                    or [Asked(cell.course_id, CODE)]
        return out
    for cell in ex.cells:
        if cell.kind is CellKind.ANSWER:
            out.append(Asked(cell.course_id, TEXT, points=cell.points))
        elif cell.kind is CellKind.SOLUTION:
            spans = _region_lines(cell.source)
            found: list[Asked] = []
            for node in ast.parse(cell.source).body:   # the model answer: the instructor's, well formed
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                if not any(first <= b and a <= node.end_lineno for a, b in spans):
                    continue   # provided code, outside every region
                if isinstance(node, ast.FunctionDef):
                    found.append(Asked(cell.course_id, FUNCTION, node.name))
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    try:
                        ast.literal_eval(node.value)
                    except ValueError:
                        continue
                    found.append(Asked(cell.course_id, LITERAL, node.targets[0].id))
            out += found or [Asked(cell.course_id, CODE)]
    return out


def _no_measure(entry: str, payload: dict) -> dict:
    raise RuntimeError("the static answer check measures nothing")


def answer_states(ex: Exercise, checked: Checked) -> list[AnswerState]:
    """One ``AnswerState`` per :func:`asked` item, judged from ``checked`` (``intake.cells.check``'s result)."""
    ctx = GradeContext(ex, dict(checked.cells), _no_measure)
    from course_grader.verdict.shipping import allowlist_for

    states = []
    for item in asked(ex):
        cell = ex.cell(item.cell_id)
        states.append(_state(ex, item, checked, ctx, allowlist_for(ex, cell.allow)))
    return states


def _state(ex: Exercise, item: Asked, checked: Checked, ctx: GradeContext, allowed) -> AnswerState:
    cid = item.cell_id
    if item.kind == TEXT:
        if cid not in checked.answers:
            return AnswerState(item, UNANSWERED, "the answer cell is missing from your notebook")
        released = ANSWER_REGION.sub(ANSWER_PROMPT, ex.cell(cid).source)
        text = checked.answers[cid]
        if not normalized(text.replace(ANSWER_PROMPT, "")) \
                or normalized(text.replace(ANSWER_PROMPT, "")) == normalized(released.replace(ANSWER_PROMPT, "")):
            return AnswerState(item, UNANSWERED, f"the cell still holds the prompt {ANSWER_PROMPT}")
        return AnswerState(item, ANSWERED)
    source = checked.cells.get(cid)
    if source is None:
        return AnswerState(item, UNANSWERED, f"{cid}: the answer cell is missing from your notebook")
    if stub_line("", cid).strip() in source:
        return AnswerState(item, UNANSWERED, "still the release's stub: replace the line "
                                             "`raise NotImplementedError(...)` with your answer")
    try:
        if item.kind == LITERAL:
            ctx.literal(cid, item.name)
        elif item.kind == FUNCTION and allowed is not None:
            ctx.function_source(cid, item.name, allowed)
        else:
            tree = parse_source(source, cid)
            if item.kind == FUNCTION and not any(isinstance(n, ast.FunctionDef) and n.name == item.name
                                                 for n in tree.body):
                return AnswerState(item, INVALID, f"{cid}: no top-level `def {item.name}` in the cell")
    except (AnswerError, AllowListError) as exc:
        return AnswerState(item, INVALID, str(exc))
    except (RecursionError, MemoryError) as exc:
        return AnswerState(item, INVALID, f"{cid}: your answer could not be read ({type(exc).__name__}: "
                                          "it is nested too deeply or too large)")
    return AnswerState(item, ANSWERED)
