"""``course release``: generate ``exercises/`` from ``solutions/`` (the one source).

Per ``docs/exercise-format.md``: solution regions become a stub raising
``NotImplementedError`` (indentation and surrounding provided code kept),
model answers become a prompt, hidden tests and rubrics are removed, outputs
and execution counts are cleared, locked and test cells become read-only.
Output is a pure function of the source, so a re-run is byte-identical and
``course release --check`` can compare it with what is on disk.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

from ..paths import EXERCISES, SOLUTIONS
from .format import ANSWER_REGION, BEGIN_CODE, BEGIN_MD, END_CODE, END_MD, KINDS, READ_ONLY_KINDS  # noqa: F401

ANSWER_PROMPT = "*Write your answer here.*"


class ReleaseError(ValueError):
    """The source notebook breaks the format contract."""


def stub_line(indent: str, cell_id: str) -> str:
    return f'{indent}raise NotImplementedError("{cell_id}: replace this line with your answer")'


def stub_code(source: str, cell_id: str) -> str:
    """Replace every BEGIN/END SOLUTION region (markers included) with a stub."""
    out: list[str] = []
    inside = False
    found = False
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped == BEGIN_CODE:
            if inside:
                raise ReleaseError(f"{cell_id}: nested {BEGIN_CODE}")
            inside, found = True, True
            out.append(stub_line(line[: len(line) - len(line.lstrip())], cell_id))
        elif stripped == END_CODE:
            if not inside:
                raise ReleaseError(f"{cell_id}: {END_CODE} without {BEGIN_CODE}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ReleaseError(f"{cell_id}: {BEGIN_CODE} is never closed")
    if not found:
        raise ReleaseError(f"{cell_id}: a 'solution' cell needs a {BEGIN_CODE} region")
    return "\n".join(out)


def prompt_markdown(source: str, cell_id: str) -> str:
    """Replace the model answer (markers included) with a prompt."""
    if not ANSWER_REGION.search(source):
        raise ReleaseError(f"{cell_id}: an 'answer' cell needs a {BEGIN_MD} region")
    return ANSWER_REGION.sub(ANSWER_PROMPT, source)


def release_notebook(source_nb):
    """The student copy of one solution notebook (the source is not modified)."""
    nb = copy.deepcopy(source_nb)
    cells = []
    seen: set[str] = set()
    for cell in nb.cells:
        course = cell.metadata.get("course")
        if course is not None:
            cid, kind = course.get("id"), course.get("kind")
            if kind not in KINDS:
                raise ReleaseError(f"cell {cid!r}: unknown kind {kind!r}")
            if not cid or cid in seen:
                raise ReleaseError(f"cell id {cid!r} is missing or not unique")
            if cell.get("id") != cid:
                raise ReleaseError(f"cell {cid!r}: nbformat id {cell.get('id')!r} must equal the course id")
            seen.add(cid)
            if kind == "hidden-test":
                continue
            course.pop("rubric", None)
            if kind == "solution":
                cell.source = stub_code(cell.source, cid)
            elif kind == "answer":
                cell.source = prompt_markdown(cell.source, cid)
            if kind in READ_ONLY_KINDS:
                cell.metadata["editable"] = False
                cell.metadata["deletable"] = False
        for marker in (BEGIN_CODE, END_CODE, BEGIN_MD, END_MD):
            if marker in cell.source:
                raise ReleaseError(f"cell {cell.get('id')!r}: {marker!r} outside a solution/answer cell")
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("language_info", None)  # the kernel fills it in; keep the copy stable
    return nb


def render(source_path: Path) -> str:
    """The exercise notebook's exact file text for one solution notebook."""
    nb = nbformat.read(source_path, as_version=4)
    return nbformat.writes(release_notebook(nb)) + "\n"


def _sources(solutions_dir: Path) -> list[Path]:
    return sorted(Path(solutions_dir).glob("ex[0-9][0-9]_*.ipynb"))


def release_all(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write every exercise notebook; return the paths written (in order)."""
    exercises_dir = Path(exercises_dir)
    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in _sources(solutions_dir):
        target = exercises_dir / source.name
        text = render(source)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def check_all(solutions_dir: Path, exercises_dir: Path) -> list[str]:
    """Exercise files that differ from a fresh release (missing, stale or extra)."""
    problems = []
    expected = {s.name: render(s) for s in _sources(solutions_dir)}
    for name, text in expected.items():
        target = Path(exercises_dir) / name
        if not target.exists():
            problems.append(f"{target}: missing")
        elif target.read_text(encoding="utf-8") != text:
            problems.append(f"{target}: differs from its solution's release")
    for extra in sorted(Path(exercises_dir).glob("ex[0-9][0-9]_*.ipynb")):
        if extra.name not in expected:
            problems.append(f"{extra}: has no source in solutions/")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course release", description="regenerate exercises/ from solutions/")
    parser.add_argument("--check", action="store_true", help="compare with a fresh release in memory; exit 1 on any difference")
    parser.add_argument("--solutions", type=Path, default=SOLUTIONS)
    parser.add_argument("--exercises", type=Path, default=EXERCISES)
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = check_all(args.solutions, args.exercises)
            for line in problems:
                print(line)
            print("exercises are up to date" if not problems else f"{len(problems)} exercise file(s) out of date: run `course release`")
            return 1 if problems else 0
        written = release_all(args.solutions, args.exercises)
    except ReleaseError as exc:
        print(f"release failed: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"  {path.name}")
    print(f"released {len(written)} exercise(s) -> {args.exercises}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
