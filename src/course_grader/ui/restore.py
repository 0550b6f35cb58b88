"""``course restore NOTEBOOK --cell ID``: put a locked or test cell back as the course released it.

``course check`` flags a locked or test cell that was edited, deleted, duplicated or changed to
another type, and names this command. It changes only the cells it is asked for, in the file on
disk, and keeps everything else (the student's answers, own cells, outputs, notebook metadata):

* an edited cell (or one changed to another type) gets the released source, type and course
  metadata back; a code cell's outputs are cleared, as they came from the edited code;
* a deleted cell is put back where the release has it: after the nearest cell before it that the
  notebook still holds;
* of a duplicated cell, the first copy is restored and every other copy becomes a plain cell of the
  student's own (its course metadata removed, its text kept), so nothing typed is lost.

Solution and answer cells are the student's: asking for one is a usage error, never an overwrite.
The released cell comes from what ``course check`` judges against (``check.student_exercises``): the
release of the instructor's solutions when readable, else the course's released copy. The file is
written atomically (a temporary file, then a rename), with its mode kept. A notebook open in
JupyterLab is said, since Lab would write its own copy back over the restored file on the next save.

Exit status: 0 when restored (or nothing to do), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import uuid
from pathlib import Path

import nbformat

from compile_course.paths import SOLUTIONS
from course_grader.errors import UsageError
from course_grader.exercise.model import CellKind, Exercise

from .check import find_exercise, locate, say, student_exercises

LOCK_KEYS = ("course", "editable", "deletable")   # the cell metadata a release sets


def released_cells(ex: Exercise) -> list:
    """The released copy's cells of ``ex``, in order (nbformat nodes)."""
    if ex.from_release:
        return list(ex.notebook.cells)
    from course_grader.exercise.release import student_notebook

    return list(student_notebook(ex).cells)


def _course_id(cell) -> str | None:
    meta = cell.get("metadata", {}).get("course")
    return meta.get("id") if isinstance(meta, dict) and isinstance(meta.get("id"), str) else None


def _own_cell(cell):
    """A copy of a duplicated cell, made the student's own: text kept, course metadata gone, a fresh id."""
    cell = copy.deepcopy(cell)
    for key in LOCK_KEYS:
        cell.metadata.pop(key, None)
    cell["id"] = uuid.uuid4().hex[:8]
    return cell


def restore(nb, released: list, cell_ids: list[str]) -> list[str]:
    """Restore ``cell_ids`` in ``nb`` (changed in place) from ``released``; one line per change made."""
    by_id = {_course_id(c): c for c in released if _course_id(c)}
    order = [_course_id(c) for c in released if _course_id(c)]
    done = []
    for cid in cell_ids:
        want = copy.deepcopy(by_id[cid])
        at = [i for i, c in enumerate(nb.cells) if _course_id(c) == cid]
        if not at:
            before = order[:order.index(cid)]
            present = [i for i, c in enumerate(nb.cells) if _course_id(c) in before]
            nb.cells.insert(present[-1] + 1 if present else 0, want)
            done.append(f"{cid}: put back (it was deleted)")
            continue
        first, *extra = at
        mine = nb.cells[first]
        same = mine.get("cell_type") == want.cell_type and mine.get("source") == want.source \
            and all(mine.get("metadata", {}).get(k) == want.metadata.get(k) for k in LOCK_KEYS)
        if not same:
            if want.cell_type == "code" and mine.get("cell_type") == "code" and mine.get("source") == want.source:
                want.outputs, want.execution_count = mine.get("outputs", []), mine.get("execution_count")
            nb.cells[first] = want
            done.append(f"{cid}: restored as released")
        for i in extra:
            nb.cells[i] = _own_cell(nb.cells[i])
        if extra:
            done.append(f"{cid}: {len(extra)} other copy(ies) kept as cells of your own (no longer {cid})")
    return done


def _write(path: Path, nb) -> None:
    real = Path(os.path.realpath(path))   # the student's file may be a link: write what it points to
    mode = real.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(nbformat.writes(nb) + "\n")
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="course restore", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path, help="your notebook, e.g. work/exercises/ex01_capture_boundary.ipynb")
    p.add_argument("--cell", action="append", default=[], metavar="ID",
                   help="the id of a locked or test cell, as course check names it (repeatable)")
    p.add_argument("--all", action="store_true", help="every locked and test cell")
    p.add_argument("--solutions", type=Path, default=SOLUTIONS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        if not args.cell and not args.all:
            raise UsageError("say which cell: --cell ID (as course check names it), or --all")
        args.file = locate(args.file)
        exercises, _ = student_exercises(args.solutions)
        ex = find_exercise(args.file, exercises)
        protected = [c.course_id for c in ex.cells if c.kind in (CellKind.LOCKED, CellKind.TEST)]
        known = ex.by_id()
        for cid in args.cell:
            if cid not in known:
                raise UsageError(f"{ex.name} has no cell {cid!r} (its locked and test cells: {', '.join(protected)})")
            if cid not in protected:
                raise UsageError(f"{cid} is a {known[cid].kind} cell, yours to write: course restore puts back "
                                 "only locked and test cells")
        try:
            nb = nbformat.reads(Path(args.file).read_text(encoding="utf-8"), as_version=4)
        except Exception as exc:  # noqa: BLE001 - any unreadable notebook: say so, change nothing
            raise UsageError(f"{args.file}: not a readable notebook ({exc}); nothing was changed") from None
    except UsageError as exc:
        print(f"course restore: {exc}", file=sys.stderr)
        return 2
    done = restore(nb, released_cells(ex), protected if args.all else list(dict.fromkeys(args.cell)))
    if not done:
        say(f"{args.file}: already as released; nothing changed")
        return 0
    _write(args.file, nb)
    for line in done:
        say(f"  {line}")
    say(f"{args.file}: {len(done)} change(s) written; everything else is as it was")
    from course_grader.intake.open_notebooks import open_in

    for url in open_in(args.file):
        say(f"note: this notebook is open in the Jupyter server at {url}: reload it there before you save "
            "(File > Reload Notebook from Disk), or Lab writes its own copy back over the restored one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
