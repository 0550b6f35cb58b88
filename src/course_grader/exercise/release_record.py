"""The release record, ``exercises/.release-record.json``: what the course has released, beyond the notebooks.

``course release`` writes it beside the student copies, and ``course publish`` ships it, so a
student's copy of the course (no ``solutions/``) still knows, for each exercise:

* ``hidden_tests``: the id and points of each hidden test, never its code (``course check`` says
  how many there are and what they are worth);
* ``asked``: what each solution cell asks for (a literal ``BREAKS``, a ``def rewrite``, free
  code), as read from the model answer; the names are the ones the instructions already give;
* ``versions``: for every locked and test cell, the digest (``intake.cells.cell_digest``) of every
  version any release has published, and ``added_in``, the release that first had the cell.
  A student working from an earlier release hands in cells the course has since changed; the
  grader counts such a cell as intact (a notice, not a flag). It always runs its own current
  cells anyway.

History is only ever added to: each release merges its cells into the record it finds. The file
carries its schema version; an older or unreadable record is started afresh from the current
release (the history it had is then lost, and said so by ``course release``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course_grader.errors import ExerciseFormatError
from course_grader.intake.cells import cell_digest

from .model import Cell, CellKind, Exercise, without_lock_note

RECORD = ".release-record.json"
SCHEMA = 1


@dataclass(frozen=True)
class HiddenTest:
    id: str
    points: float


@dataclass(frozen=True)
class Asked:
    cell: str       # the solution cell's course id
    kind: str       # answers.LITERAL | FUNCTION | CODE
    name: str = ""


@dataclass(frozen=True)
class ExerciseRecord:
    name: str
    releases: int = 1
    hidden: tuple[HiddenTest, ...] = ()
    asked: tuple[Asked, ...] = ()
    versions: dict[str, frozenset[str]] = field(default_factory=dict)   # cell id -> every released digest
    added_in: dict[str, int] = field(default_factory=dict)              # cell id -> first release holding it

    def to_data(self) -> dict:
        return {"releases": self.releases,
                "hidden_tests": [{"id": h.id, "points": h.points} for h in self.hidden],
                "asked": [{"cell": a.cell, "kind": a.kind, "name": a.name} for a in self.asked],
                "versions": {cid: sorted(d) for cid, d in sorted(self.versions.items())},
                "added_in": dict(sorted(self.added_in.items()))}

    @classmethod
    def from_data(cls, name: str, data: dict) -> ExerciseRecord:
        return cls(name, int(data.get("releases", 1)),
                   tuple(HiddenTest(str(h["id"]), float(h["points"])) for h in data.get("hidden_tests", [])),
                   tuple(Asked(str(a["cell"]), str(a["kind"]), str(a.get("name", ""))) for a in data.get("asked", [])),
                   {str(k): frozenset(map(str, v)) for k, v in data.get("versions", {}).items()},
                   {str(k): int(v) for k, v in data.get("added_in", {}).items()})


def protected_versions(ex: Exercise) -> dict[str, str]:
    """``{cell id: digest}`` of the locked and test cells of this release of ``ex``."""
    return {c.course_id: cell_digest(c.cell_type, c.source) for c in ex.cells
            if c.kind in (CellKind.LOCKED, CellKind.TEST)}


def record_of(ex: Exercise, earlier: ExerciseRecord | None) -> ExerciseRecord:
    """The record of this release of ``ex`` (a solution notebook), merged into the ``earlier`` one."""
    from .answers import asked

    current = protected_versions(ex)
    versions = {k: set(v) for k, v in (earlier.versions if earlier else {}).items()}
    added = dict(earlier.added_in if earlier else {})
    releases = earlier.releases if earlier else 1
    if earlier and any(d not in earlier.versions.get(cid, ()) for cid, d in current.items()):
        releases += 1
    for cid, digest in current.items():
        versions.setdefault(cid, set()).add(digest)
        added.setdefault(cid, releases)
    return ExerciseRecord(ex.name, releases, tuple(HiddenTest(c.course_id, c.points) for c in ex.hidden_tests),
                          tuple(Asked(a.cell_id, a.kind, a.name) for a in asked(ex) if a.kind != "text"),
                          {k: frozenset(v) for k, v in versions.items()}, added)


def read(exercises_dir: Path) -> dict[str, ExerciseRecord]:
    """``{exercise name: ExerciseRecord}`` from ``exercises_dir``; ``{}`` when missing, unreadable or of
    another schema."""
    try:
        data = json.loads((Path(exercises_dir) / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("exercises"), dict):
        return {}
    out = {}
    for name, entry in data["exercises"].items():
        try:
            out[name] = ExerciseRecord.from_data(name, entry)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def text(records: dict[str, ExerciseRecord]) -> str:
    return json.dumps({"schema": SCHEMA, "exercises": {n: r.to_data() for n, r in sorted(records.items())}},
                      indent=1, sort_keys=True) + "\n"


def merged(exercises: list[Exercise], exercises_dir: Path) -> dict[str, ExerciseRecord]:
    """The record after releasing ``exercises`` into ``exercises_dir`` (earlier exercises' entries kept)."""
    records = read(exercises_dir)
    for ex in exercises:
        records[ex.name] = record_of(ex, records.get(ex.name))
    return records


def record_dir_for(solutions: Path) -> Path:
    """Where the record of ``solutions``' releases is: ``exercises/`` beside them, else the course's own
    ``exercises/`` (solutions kept in a private folder are released into the course's checkout)."""
    from compile_course.paths import EXERCISES

    beside = Path(solutions).parent / "exercises"
    return beside if (beside / RECORD).is_file() else EXERCISES


def with_history(exercises: dict[str, Exercise], exercises_dir: Path) -> dict[str, Exercise]:
    """``exercises`` (from solutions) with their record attached: what the integrity step counts as intact."""
    from dataclasses import replace

    records = read(exercises_dir)
    return {eid: replace(ex, record=records.get(ex.name)) if ex.name in records else ex
            for eid, ex in exercises.items()}


def git_versions(exercises_dir: Path, name: str) -> list[dict[str, str]]:
    """``[{cell id: digest}]`` of the locked and test cells of every committed version of
    ``exercises_dir/NAME.ipynb``, oldest first (``git log`` of that file; ``[]`` outside a git checkout)."""
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(exercises_dir), *args], capture_output=True, text=True)

    log = git("log", "--reverse", "--format=%H", "--", f"{name}.ipynb")
    out = []
    for commit in log.stdout.split() if log.returncode == 0 else []:
        shown = git("show", f"{commit}:./{name}.ipynb")
        try:
            cells = json.loads(shown.stdout).get("cells", []) if shown.returncode == 0 else []
        except ValueError:
            continue
        version = {}
        for cell in cells:
            meta = cell.get("metadata", {}).get("course") or {}
            if isinstance(meta, dict) and meta.get("kind") in (CellKind.LOCKED, CellKind.TEST) and meta.get("id"):
                source = cell.get("source", "")
                version[str(meta["id"])] = cell_digest(cell.get("cell_type", ""),
                                                       "".join(source) if isinstance(source, list) else source)
        if version:
            out.append(version)
    return out


def seeded_from_git(records: dict[str, ExerciseRecord], exercises_dir: Path) -> dict[str, ExerciseRecord]:
    """``records`` with every version of each exercise that this checkout's git history ever released
    (its committed ``exercises/`` copies) added: students work from copies made before the record
    existed. ``course release --seed-from-git``; run once, then each release keeps adding."""
    out = dict(records)
    for name, record in records.items():
        history = git_versions(exercises_dir, name)
        if not history:
            continue
        versions = {k: set(v) for k, v in record.versions.items()}
        added = dict(record.added_in)
        for number, version in enumerate(history, 1):
            for cid, digest in version.items():
                versions.setdefault(cid, set()).add(digest)
                added[cid] = min(added.get(cid, number), number)
        out[name] = ExerciseRecord(name, max(record.releases, len(history)), record.hidden, record.asked,
                                   {k: frozenset(v) for k, v in versions.items()}, added)
    return out


# ---------------------------------------------------------------- a student's copy


def released_exercise(path: Path, record: ExerciseRecord) -> Exercise:
    """The ``Exercise`` of a released (student) notebook: its locked, setup, test, solution and answer
    cells as released (locked and test cells without their lock note, as the solutions have them), and
    from ``record`` what it lacks (the hidden tests' ids and points)."""
    raw = Path(path).read_bytes()
    try:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as exc:  # noqa: BLE001 - any parse problem of the released copy
        raise ExerciseFormatError(f"{Path(path).name}: not a readable notebook: {exc}") from exc
    cells = []
    for position, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("course")
        if not isinstance(meta, dict):
            cells.append(Cell(position, cell.cell_type, cell.source, cell.get("id")))
            continue
        kind = CellKind(meta.get("kind"))
        if kind is CellKind.HIDDEN_TEST:
            raise ExerciseFormatError(f"{Path(path).name}: a released copy holds a hidden test ({meta.get('id')})")
        points = float(meta.get("points", 0.0)) if kind.has_points else 0.0
        source = without_lock_note(cell.source) if kind.read_only else cell.source   # the cell as the grader has it
        cells.append(Cell(position, cell.cell_type, source, cell.get("id"), str(meta.get("id")), kind, points,
                          "", meta.get("grader"), bool(meta.get("setup", False)), tuple(meta.get("allow", []))))
    name = Path(path).stem
    return Exercise(name, name[:4], Path(path), hashlib.sha256(raw).hexdigest(), tuple(cells), nb,
                    record=record, from_release=True)


def released_exercises(exercises_dir: Path) -> dict[str, Exercise]:
    """``{"ex01": Exercise, ...}`` from a student's copy of the course: ``exercises_dir``'s notebooks and
    record. Raises ``ExerciseFormatError`` when there is none or the record does not cover one."""
    records = read(exercises_dir)
    out: dict[str, Exercise] = {}
    for path in sorted(Path(exercises_dir).glob("ex[0-9][0-9]_*.ipynb")):
        if path.stem not in records:
            raise ExerciseFormatError(f"{exercises_dir / RECORD} does not cover {path.name} "
                                      "(an older copy of the course? update it: git pull, or your hub's link)")
        ex = released_exercise(path, records[path.stem])
        out[ex.id] = ex
    if not out:
        raise ExerciseFormatError(f"no released exercise (exNN_*.ipynb) in {exercises_dir}")
    return out
