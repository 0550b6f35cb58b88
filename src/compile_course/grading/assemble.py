"""Build the list of cells to execute: the instructor's cells, with the student's code in between.

Order follows the source notebook. Locked code and tests come from the
source; hidden tests are injected here (in memory, never written to disk);
each solution cell is the student's version (or a stub when it is missing);
the student's own extra code cells run right after the source cell they
followed in the submission. Markdown and answer cells do not run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .integrity import Matched
from .safe_ast import parse
from .source import ExerciseSource


@dataclass
class RunCell:
    index: int
    label: str               # shown to the instructor, e.g. "test ex01-t1" or "student cell #7"
    code: str
    role: str                # locked | solution | student | test | hidden-test
    course_id: str | None = None
    points: float = 0.0
    pins: list[str] = field(default_factory=list)

    @property
    def graded(self) -> bool:
        return self.role in ("test", "hidden-test")

    @property
    def trusted(self) -> bool:
        return self.role in ("locked", "test", "hidden-test")


def bound_names(code: str) -> list[str]:
    """Names a trusted cell binds by import, def or class at top level."""
    try:
        tree = parse(code)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return names


def assemble(source: ExerciseSource, matched: Matched) -> list[RunCell]:
    first_seen: dict[str, int] = {}
    for c in matched.cells:
        if c.course_id and c.course_id not in first_seen:
            first_seen[c.course_id] = c.position
    # Student code cells that map to no source cell ride behind the last source cell seen before them.
    followers: dict[str | None, list] = {}
    anchor = None
    for c in matched.cells:
        if c.course_id and first_seen.get(c.course_id) == c.position:
            anchor = c.course_id
        elif c.course_id is None and c.cell_type == "code" and c.source.strip():
            followers.setdefault(anchor, []).append(c)
    cells: list[RunCell] = []

    def add(**kw) -> None:
        cells.append(RunCell(index=len(cells), **kw))

    def add_followers(key) -> None:
        for c in followers.get(key, []):
            add(label=f"student cell #{c.position + 1}", code=c.source, role="student")

    add_followers(None)
    for src in source.cells:
        if not src.course_id:
            continue
        if src.kind in ("locked", "test", "hidden-test") and src.cell_type == "code":
            add(label=f"{src.kind} {src.course_id}", code=src.source, role=src.kind,
                course_id=src.course_id, points=src.points, pins=bound_names(src.source))
        elif src.kind == "solution":
            code = [c for c in matched.copies(src.course_id) if c.cell_type == "code"]
            for c in code:
                add(label=f"solution {src.course_id}", code=c.source, role="solution", course_id=src.course_id)
            if not code:
                add(label=f"solution {src.course_id} (missing)", role="solution", course_id=src.course_id,
                    code=f"raise NotImplementedError('solution cell {src.course_id} is missing from the submission')")
        add_followers(src.course_id)
    return cells
