"""The instructor's side of an exercise: ``solutions/exNN_slug.ipynb`` read into cell roles.

See docs/exercise-format.md: each graded cell carries
``metadata.course = {"id": ..., "kind": ..., "points": ...}``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..exercises.format import ANSWER_REGION, GRADED_KINDS, KINDS
EXERCISE_NAME = re.compile(r"^(ex\d\d)(?:_[A-Za-z0-9_]+)?$")


@dataclass(frozen=True)
class SourceCell:
    position: int
    course_id: str | None   # None for plain notes
    kind: str | None
    cell_type: str
    source: str
    points: float = 0.0
    rubric: str = ""


@dataclass
class ExerciseSource:
    name: str               # exNN_slug
    number: str             # exNN
    path: Path
    sha256: str
    cells: list[SourceCell]

    def by_id(self) -> dict[str, SourceCell]:
        return {c.course_id: c for c in self.cells if c.course_id}

    @property
    def graded(self) -> list[SourceCell]:
        return [c for c in self.cells if c.kind in GRADED_KINDS]

    @property
    def auto_points(self) -> float:
        return sum(c.points for c in self.graded)

    @property
    def manual_points(self) -> float:
        return sum(c.points for c in self.cells if c.kind == "answer")

    def question_for(self, cell: SourceCell) -> str:
        """The prompt of an answer cell: its text outside the model answer, else the cell before it."""
        prompt = ANSWER_REGION.sub("", cell.source).strip()
        if prompt:
            return prompt
        before = [c for c in self.cells if c.position < cell.position and c.cell_type == "markdown"]
        return before[-1].source.strip() if before else ""


def load_source(path: Path) -> ExerciseSource:
    """Read one solution notebook; raises ``ValueError`` if its course metadata is inconsistent."""
    path = Path(path)
    raw = path.read_bytes()
    nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    cells, seen = [], set()
    for position, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("course") or {}
        course_id, kind = meta.get("id"), meta.get("kind")
        if course_id is not None:
            if kind not in KINDS:
                raise ValueError(f"{path.name}: cell {course_id!r} has unknown kind {kind!r}")
            if course_id in seen:
                raise ValueError(f"{path.name}: duplicate course id {course_id!r}")
            seen.add(course_id)
        cells.append(SourceCell(position, course_id, kind, cell.cell_type, cell.source,
                                float(meta.get("points", 0) or 0), str(meta.get("rubric", "") or "")))
    match = EXERCISE_NAME.match(path.stem)
    if not match:
        raise ValueError(f"{path.name}: solution notebooks are named exNN_slug.ipynb")
    return ExerciseSource(path.stem, match.group(1), path, hashlib.sha256(raw).hexdigest(), cells)


def load_sources(solutions_dir: Path) -> dict[str, ExerciseSource]:
    """``{"ex01": ExerciseSource, ...}`` for every ``exNN_*.ipynb`` in ``solutions_dir``."""
    sources = {}
    for path in sorted(Path(solutions_dir).glob("ex[0-9][0-9]*.ipynb")):
        src = load_source(path)
        sources[src.number] = src
    return sources
