"""The ``Exercise`` model: one solution notebook, parsed and validated once.

The format is described in docs/exercise-format.md. Each cell that matters to
grading carries ``metadata.course = {"id", "kind", "points"?, "rubric"?, "grader"?}``;
the nbformat cell id equals the course id. Release (``course_grader.exercise.release``),
grading (``course_grader.pipeline``), the sample maker and the tests all read
solution notebooks through ``Exercise.load`` and nothing else.

Validation happens here, in one place, so a malformed source fails the same
way everywhere (``ExerciseFormatError``, a ``ValueError``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import nbformat

from course_grader.errors import ExerciseFormatError

BEGIN_CODE, END_CODE = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_MD, END_MD = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
ANSWER_REGION = re.compile(re.escape(BEGIN_MD) + r"(.*?)" + re.escape(END_MD), re.DOTALL)
# What the released copy puts where an answer goes (course release writes it, course check reads it)
ANSWER_PROMPT = "*Write your answer here.*"

EXERCISE_FILE = re.compile(r"^(ex\d\d)_[A-Za-z0-9_]+$")
COURSE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MARKERS = (BEGIN_CODE, END_CODE, BEGIN_MD, END_MD)


def stub_line(indent: str, cell_id: str) -> str:
    """The line a released solution cell holds in place of a model answer."""
    return f'{indent}raise NotImplementedError("{cell_id}: replace this line with your answer")'


def restore_command(notebook: str, cell_id: str) -> str:
    """The command that puts a released locked or test cell back (``course restore``, ui/restore.py)."""
    return f"course restore {notebook} --cell {cell_id}"


# JupyterLab ignores typing in a cell that is ``editable: false`` without a word, so each locked and test
# code cell of the released copy starts with this one line, saying so, why, and how to get it back.
# Comparisons drop it (``without_lock_note``): a copy from before the note, or one whose note was
# deleted, is intact, and the release record's digests are the same with or without it.
LOCK_NOTE = "# Locked: the grader runs the course's own copy of this cell, so it takes no typing. Changed it? {command}"
LOCK_NOTE_LINE = re.compile(r"# Locked: the grader runs the course's own copy of this cell[^\n]*"
                            r"course restore \S+ --cell \S+[ \t]*(\r?\n|$)")


def lock_note(notebook: str, cell_id: str) -> str:
    """The first line of a released locked or test code cell of ``notebook`` (a file name)."""
    return LOCK_NOTE.format(command=restore_command(notebook, cell_id))


def without_lock_note(source: str) -> str:
    """``source`` without the release's lock note when it starts with one (blank lines before it allowed)."""
    stripped = source.lstrip("\r\n")
    m = LOCK_NOTE_LINE.match(stripped)
    return stripped[m.end():] if m else source


SHOWN_NAME_CHARS = 60


def shown_name(source: str) -> str:
    """A cell as the student sees it in JupyterLab, which shows no ids or numbers: its first line that is
    not blank (nor the lock note), clipped to ``SHOWN_NAME_CHARS``."""
    first = next((line.strip() for line in without_lock_note(source).splitlines() if line.strip()), "")
    if not first:
        return "(an empty cell)"
    return first if len(first) <= SHOWN_NAME_CHARS else first[:SHOWN_NAME_CHARS - 3].rstrip() + "..."


DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class CellKind(StrEnum):
    LOCKED = "locked"
    SOLUTION = "solution"
    ANSWER = "answer"
    TEST = "test"
    HIDDEN_TEST = "hidden-test"

    @property
    def graded(self) -> bool:
        """Automatically graded: a verdict per cell."""
        return self in (CellKind.TEST, CellKind.HIDDEN_TEST)

    @property
    def read_only(self) -> bool:
        """Kept in the student copy, but restored from the source at grading."""
        return self in (CellKind.LOCKED, CellKind.TEST)

    @property
    def has_points(self) -> bool:
        return self in (CellKind.TEST, CellKind.HIDDEN_TEST, CellKind.ANSWER)


@dataclass(frozen=True)
class Cell:
    position: int
    cell_type: str                  # "code" | "markdown" | "raw"
    source: str
    nb_id: str | None               # the nbformat cell id
    course_id: str | None = None    # None for plain cells (scratch, notes)
    kind: CellKind | None = None
    points: float = 0.0
    rubric: str = ""
    grader: Any = None              # optional ``metadata.course.grader`` entry, passed through as is
    setup: bool = False             # a locked code cell the grader runs before tests and student code
    allow: tuple[str, ...] = ()     # a solution cell's extra dotted names for the allow-list

    @property
    def graded(self) -> bool:
        return self.kind is not None and self.kind.graded

    @property
    def hidden(self) -> bool:
        return self.kind is CellKind.HIDDEN_TEST

    def code_regions(self) -> list[str]:
        """The text of every BEGIN/END SOLUTION region of a solution cell (markers excluded)."""
        return _code_regions(self.source, self.course_id or "?")

    def answer_region(self) -> str:
        """The model answer of an answer cell."""
        m = ANSWER_REGION.search(self.source)
        return m.group(1).strip() if m else ""


def _code_regions(source: str, cell_id: str) -> list[str]:
    regions: list[str] = []
    current: list[str] | None = None
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped == BEGIN_CODE:
            if current is not None:
                raise ExerciseFormatError(f"{cell_id}: nested {BEGIN_CODE}")
            current = []
        elif stripped == END_CODE:
            if current is None:
                raise ExerciseFormatError(f"{cell_id}: {END_CODE} without {BEGIN_CODE}")
            regions.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        raise ExerciseFormatError(f"{cell_id}: {BEGIN_CODE} is never closed")
    return regions


def _points(meta: dict, cid: str, kind: CellKind) -> float:
    raw = meta.get("points")
    if raw is None:
        if kind.has_points:
            raise ExerciseFormatError(f"{cid}: a {kind} cell needs 'points'")
        return 0.0
    if not kind.has_points:
        raise ExerciseFormatError(f"{cid}: a {kind} cell carries no points")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw >= 0 or raw != raw:
        raise ExerciseFormatError(f"{cid}: points must be a number >= 0, not {raw!r}")
    return float(raw)


@dataclass(frozen=True)
class Exercise:
    name: str                       # "ex01_capture_boundary"
    id: str                         # "ex01"
    path: Path
    sha256: str                     # of the solution file's bytes: part of every attempt key
    cells: tuple[Cell, ...]
    # the parsed nbformat node (read it, do not modify it)
    notebook: Any = field(repr=False, compare=False, default=None)
    # what the release record knows of this exercise (``release_record.ExerciseRecord``): every cell
    # version released so far and, for a student's copy, the hidden tests' ids and points
    record: Any = field(repr=False, compare=False, default=None)
    # True when read from a released (student) copy: no model answers, no hidden test's code
    from_release: bool = False

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: Path | str) -> Exercise:
        path = Path(path)
        return cls.from_bytes(path.read_bytes(), path)

    @classmethod
    def from_bytes(cls, raw: bytes, path: Path | str) -> Exercise:
        path = Path(path)
        match = EXERCISE_FILE.match(path.stem)
        if not match:
            raise ExerciseFormatError(f"{path.name}: solution notebooks are named exNN_slug.ipynb")
        try:
            nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        except Exception as exc:  # noqa: BLE001 - any parse problem is a format error of the source
            raise ExerciseFormatError(f"{path.name}: not a readable notebook: {exc}") from exc
        cells: list[Cell] = []
        seen: set[str] = set()
        for position, cell in enumerate(nb.cells):
            meta = cell.get("metadata", {}).get("course")
            source = cell.get("source", "")
            if meta is None:
                for marker in MARKERS:
                    if marker in source:
                        raise ExerciseFormatError(f"cell {cell.get('id')!r}: {marker!r} outside a solution/answer cell")
                cells.append(Cell(position, cell.cell_type, source, cell.get("id")))
                continue
            if not isinstance(meta, dict):
                raise ExerciseFormatError(f"{path.name}: cell {cell.get('id')!r}: metadata.course must be a mapping")
            cid, kind_text = meta.get("id"), meta.get("kind")
            try:
                kind = CellKind(kind_text)
            except ValueError:
                raise ExerciseFormatError(f"cell {cid!r}: unknown kind {kind_text!r}") from None
            if not isinstance(cid, str) or not cid or cid in seen:
                raise ExerciseFormatError(f"cell id {cid!r} is missing or not unique")
            if not COURSE_ID.match(cid):
                raise ExerciseFormatError(f"cell id {cid!r}: use letters, digits, '-', '_' and '.'")
            if cell.get("id") != cid:
                raise ExerciseFormatError(f"cell {cid!r}: nbformat id {cell.get('id')!r} must equal the course id")
            seen.add(cid)
            if kind is CellKind.SOLUTION:
                if cell.cell_type != "code":
                    raise ExerciseFormatError(f"{cid}: a 'solution' cell must be a code cell")
                if not _code_regions(source, cid):
                    raise ExerciseFormatError(f"{cid}: a 'solution' cell needs a {BEGIN_CODE} region")
            elif kind is CellKind.ANSWER:
                if cell.cell_type != "markdown":
                    raise ExerciseFormatError(f"{cid}: an 'answer' cell must be a markdown cell")
                if not ANSWER_REGION.search(source):
                    raise ExerciseFormatError(f"{cid}: an 'answer' cell needs a {BEGIN_MD} region")
            elif kind.graded and cell.cell_type != "code":
                raise ExerciseFormatError(f"{cid}: a {kind} cell must be a code cell")
            stray = [m for m in MARKERS if m in ANSWER_REGION.sub("", source)] if kind is CellKind.ANSWER else \
                [m for m in MARKERS if m in source] if kind is not CellKind.SOLUTION else \
                [m for m in MARKERS for line in source.split("\n") if m in line and line.strip() != m]
            if stray:
                raise ExerciseFormatError(f"cell {cid!r}: {stray[0]!r} outside a solution/answer cell")
            rubric = meta.get("rubric", "") or ""
            if not isinstance(rubric, str):
                raise ExerciseFormatError(f"{cid}: rubric must be text")
            setup = meta.get("setup", False)
            if setup not in (True, False) or setup and (kind is not CellKind.LOCKED or cell.cell_type != "code"):
                raise ExerciseFormatError(f"{cid}: 'setup' is true or false, and only a locked code cell is setup")
            allow = meta.get("allow", [])
            if not isinstance(allow, list) or not all(isinstance(a, str) and DOTTED.fullmatch(a) for a in allow) \
                    or allow and kind is not CellKind.SOLUTION:
                raise ExerciseFormatError(f"{cid}: 'allow' is a list of dotted names "
                                          "(torch._dynamo.mark_dynamic), on a solution cell")
            cells.append(Cell(position, cell.cell_type, source, cell.get("id"), cid, kind,
                              _points(meta, cid, kind), rubric, meta.get("grader"), setup, tuple(allow)))
        exercise = cls(path.stem, match.group(1), path, hashlib.sha256(raw).hexdigest(), tuple(cells), nb)
        if not any(c.course_id for c in cells):
            raise ExerciseFormatError(f"{path.name}: no cell carries metadata.course")
        return exercise

    # ------------------------------------------------------------------ views
    @property
    def setup_sources(self) -> list[str]:
        """The source of every setup cell, in order: what the grader runs before tests and student code."""
        return [c.source for c in self.cells if c.setup]

    @property
    def tests(self) -> list[Cell]:
        """Graded cells (public and hidden tests), in notebook order."""
        return [c for c in self.cells if c.graded]

    @property
    def hidden_tests(self) -> list[Cell]:
        return [c for c in self.cells if c.hidden]

    @property
    def hidden_points(self) -> list[tuple[str, float]]:
        """``(id, points)`` of every hidden test: from its cells, or from the record for a released copy."""
        if self.from_release:
            return [(h.id, h.points) for h in (self.record.hidden if self.record else ())]
        return [(c.course_id, c.points) for c in self.hidden_tests]

    @property
    def answers(self) -> list[Cell]:
        return [c for c in self.cells if c.kind is CellKind.ANSWER]

    @property
    def solutions(self) -> list[Cell]:
        return [c for c in self.cells if c.kind is CellKind.SOLUTION]

    @property
    def auto_points(self) -> float:
        return sum(c.points for c in self.tests)

    @property
    def manual_points(self) -> float:
        return sum(c.points for c in self.answers)

    @property
    def title(self) -> str:
        """The first markdown heading, without its '#' (falls back to the name)."""
        for c in self.cells:
            if c.cell_type == "markdown":
                for line in c.source.splitlines():
                    if line.startswith("#"):
                        return line.lstrip("#").strip()
        return self.name

    def by_id(self) -> dict[str, Cell]:
        return {c.course_id: c for c in self.cells if c.course_id}

    def cell(self, course_id: str) -> Cell:
        try:
            return self.by_id()[course_id]
        except KeyError:
            raise KeyError(f"{self.name} has no cell {course_id!r}") from None

    def question_for(self, cell: Cell) -> str:
        """The prompt of an answer cell: its text outside the model answer, else the markdown cell before it."""
        prompt = ANSWER_REGION.sub("", cell.source).strip()
        if prompt:
            return prompt
        before = [c for c in self.cells if c.position < cell.position and c.cell_type == "markdown"]
        return before[-1].source.strip() if before else ""


def load_exercises(solutions_dir: Path | str) -> dict[str, Exercise]:
    """``{"ex01": Exercise, ...}`` for every ``exNN_*.ipynb`` in ``solutions_dir``, sorted."""
    exercises: dict[str, Exercise] = {}
    for path in sorted(Path(solutions_dir).glob("ex[0-9][0-9]_*.ipynb")):
        ex = Exercise.load(path)
        if ex.id in exercises:
            raise ExerciseFormatError(f"two solution notebooks for {ex.id}: {exercises[ex.id].path.name}, {path.name}")
        exercises[ex.id] = ex
    return exercises
