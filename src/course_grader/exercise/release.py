"""``course release``: generate ``exercises/`` from ``solutions/`` (the one source).

Each solution notebook is read through ``Exercise.load`` (which validates the
format); its student copy is then a pure function of it: solution regions
become a stub raising ``NotImplementedError`` (indentation and surrounding
provided code kept), model answers become a prompt, hidden tests and rubrics
are removed, outputs and execution counts are cleared, locked and test cells
become read-only, and each locked or test code cell starts with a one-line note
(``model.lock_note``) that says it is locked, why, and the command that puts it back:
JupyterLab refuses typing in such a cell without a word. A re-run is byte-identical, so ``course release --check``
can compare a fresh release in memory with what is on disk.

Beside the copies, ``exercises/.release-record.json`` (``release_record``) keeps what a student's
copy of the course must know without the solutions (the hidden tests' ids and points, what each
cell asks for) and the digest of every locked and test cell version ever released, so a
submission made from an earlier release is not flagged for the course's own later edits.

Release never overwrites work. ``exercises/.released.json`` records the SHA-256 of each
file it wrote; a file on disk that matches neither that record nor the new release was
changed by hand (a student who answered in ``exercises/`` rather than in their workspace,
``work/``), and the release stops, names it and changes nothing, unless ``--force``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path

import nbformat

from compile_course.paths import EXERCISES, SOLUTIONS
from course_grader.errors import ChangedByHand

from .model import (
    ANSWER_PROMPT,
    ANSWER_REGION,
    BEGIN_CODE,
    END_CODE,
    CellKind,
    Exercise,
    ExerciseFormatError,
    lock_note,
    stub_line,
)

ReleaseError = ExerciseFormatError   # the name release callers know
MANIFEST = ".released.json"          # in exercises/: {file name: SHA-256 of the text the release wrote}


def stub_code(source: str, cell_id: str) -> str:
    """Replace every BEGIN/END SOLUTION region (markers included) with one stub line.

    The model has already checked that the regions are well formed."""
    out: list[str] = []
    inside = False
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped == BEGIN_CODE:
            inside = True
            out.append(stub_line(line[: len(line) - len(line.lstrip())], cell_id))
        elif stripped == END_CODE:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def student_notebook(exercise: Exercise):
    """The student copy of one exercise, as an nbformat node (the exercise is not modified)."""
    nb = copy.deepcopy(exercise.notebook)
    cells = []
    for model_cell, cell in zip(exercise.cells, nb.cells, strict=True):
        kind = model_cell.kind
        if kind is CellKind.HIDDEN_TEST:
            continue
        if kind is not None:
            cell.metadata["course"].pop("rubric", None)
            if kind is CellKind.SOLUTION:
                cell.source = stub_code(cell.source, model_cell.course_id)
            elif kind is CellKind.ANSWER:
                cell.source = ANSWER_REGION.sub(ANSWER_PROMPT, cell.source)
            if kind.read_only:
                cell.metadata["editable"] = False
                cell.metadata["deletable"] = False
                # Lab says nothing when typing is refused: the cell says why (not above a cell magic,
                # which must stay the cell's first line)
                if cell.cell_type == "code" and not cell.source.lstrip().startswith("%%"):
                    cell.source = lock_note(f"{exercise.name}.ipynb", model_cell.course_id) + "\n" + cell.source
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    # kernelspec and language_info stay as the solution stores them: what JupyterLab writes,
    # so opening and saving an exercise in Lab leaves the file unchanged.
    return nb


def answered_notebook(exercise: Exercise):
    """The student copy with the model answers put back: what a perfect submission looks like.

    Used to warm the compile cache (and prove the verdicts) before a class is graded, and by the
    sample maker and the tests."""
    nb = student_notebook(exercise)
    model = exercise.by_id()
    for cell in nb.cells:
        cid = cell.metadata.get("course", {}).get("id")
        if cid in model and model[cid].kind in (CellKind.SOLUTION, CellKind.ANSWER):
            cell.source = model[cid].source
    return nb


def render(source_path: Path) -> str:
    """The exercise notebook's exact file text for one solution notebook."""
    return nbformat.writes(student_notebook(Exercise.load(source_path))) + "\n"


def _sources(solutions_dir: Path) -> list[Path]:
    return sorted(Path(solutions_dir).glob("ex[0-9][0-9]_*.ipynb"))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_text(texts: dict[str, str]) -> str:
    return json.dumps({name: _digest(text.encode("utf-8")) for name, text in sorted(texts.items())},
                      indent=1, sort_keys=True) + "\n"


def _read_manifest(exercises_dir: Path) -> dict[str, str]:
    try:
        data = json.loads((exercises_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def changed_by_hand(exercises_dir: Path, texts: dict[str, str]) -> list[Path]:
    """Exercise files that a release of ``texts`` would overwrite although the last release did not write them."""
    released = _read_manifest(exercises_dir)
    changed = []
    for name, text in texts.items():
        target = exercises_dir / name
        if not target.is_file():
            continue
        current = _digest(target.read_bytes())
        if current != _digest(text.encode("utf-8")) and current != released.get(name):
            changed.append(target)
    return changed


def release_all(solutions_dir: Path, exercises_dir: Path, force: bool = False) -> list[Path]:
    """Write every exercise notebook; return the paths written (in order).

    Every source is rendered before anything is written, so a malformed source
    leaves exercises/ untouched. Raises ``ChangedByHand``, writing nothing, when a file
    was edited since the last release (unless ``force``)."""
    from . import release_record

    exercises_dir = Path(exercises_dir)
    loaded = [Exercise.load(source) for source in _sources(solutions_dir)]
    texts = {ex.path.name: nbformat.writes(student_notebook(ex)) + "\n" for ex in loaded}
    if not force and (changed := changed_by_hand(exercises_dir, texts)):
        raise ChangedByHand(changed)
    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in texts.items():
        target = exercises_dir / name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    manifest = exercises_dir / MANIFEST
    new_manifest = manifest_text(texts)
    if not manifest.is_file() or manifest.read_text(encoding="utf-8") != new_manifest:
        manifest.write_text(new_manifest, encoding="utf-8")
    record = exercises_dir / release_record.RECORD
    new_record = release_record.text(release_record.merged(loaded, exercises_dir))
    if not record.is_file() or record.read_text(encoding="utf-8") != new_record:
        record.write_text(new_record, encoding="utf-8")
    return written


def check_all(solutions_dir: Path, exercises_dir: Path) -> list[str]:
    """Exercise files that differ from a fresh release (missing, stale or extra)."""
    from . import release_record

    problems = []
    loaded = [Exercise.load(source) for source in _sources(solutions_dir)]
    expected = {ex.path.name: nbformat.writes(student_notebook(ex)) + "\n" for ex in loaded}
    for name, text in expected.items():
        target = Path(exercises_dir) / name
        if not target.exists():
            problems.append(f"{target}: missing")
        elif target.read_text(encoding="utf-8") != text:
            problems.append(f"{target}: differs from its solution's release")
    for extra in sorted(Path(exercises_dir).glob("ex[0-9][0-9]_*.ipynb")):
        if extra.name not in expected:
            problems.append(f"{extra}: has no source in solutions/")
    manifest = Path(exercises_dir) / MANIFEST
    if not manifest.is_file() or manifest.read_text(encoding="utf-8") != manifest_text(expected):
        problems.append(f"{manifest}: does not record this release")
    record = Path(exercises_dir) / release_record.RECORD
    if not record.is_file() or record.read_text(encoding="utf-8") != \
            release_record.text(release_record.merged(loaded, Path(exercises_dir))):
        problems.append(f"{record}: does not record this release")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course release", description="regenerate exercises/ from solutions/",
                                     allow_abbrev=False)
    parser.add_argument("--check", action="store_true",
                        help="compare with a fresh release in memory; exit 1 on any difference")
    parser.add_argument("--solutions", type=Path, default=SOLUTIONS)
    parser.add_argument("--exercises", type=Path, default=EXERCISES)
    parser.add_argument("--force", action="store_true",
                        help="overwrite exercise files even if they were edited since the last release")
    parser.add_argument("--seed-from-git", action="store_true",
                        help="also record every version of the exercises this checkout's git history holds "
                             "(once, for copies students made before the release record existed)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = check_all(args.solutions, args.exercises)
            for line in problems:
                print(line)
            print("exercises are up to date" if not problems
                  else f"{len(problems)} exercise file(s) out of date: run `course release`")
            return 1 if problems else 0
        written = release_all(args.solutions, args.exercises, force=args.force)
        if args.seed_from_git:
            from . import release_record

            records = release_record.read(args.exercises)
            seeded = release_record.seeded_from_git(records, args.exercises)
            (args.exercises / release_record.RECORD).write_text(release_record.text(seeded), encoding="utf-8")
            added = sum(len(r.versions.get(c, ())) for r in seeded.values() for c in r.versions) - \
                sum(len(v) for r in records.values() for v in r.versions.values())
            print(f"release record: {added} earlier cell version(s) added from the git history of {args.exercises}")
    except ExerciseFormatError as exc:
        print(f"release failed: {exc}", file=sys.stderr)
        return 2
    except ChangedByHand as exc:
        print(f"course release: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"  {path.name}")
    print(f"released {len(written)} exercise(s) -> {args.exercises}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
