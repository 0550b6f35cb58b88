"""The bundled sample submissions, generated from the instructor's solutions.

    python -m course_grader.samples [--solutions DIR] [--out DIR]   (default: tests/samples/submissions)
    python -m course_grader.samples --out DIR --check GRADED [--exercise exNN]   (compare a grading run)

Writes ``SAMPLE__exNN_slug.ipynb`` files (the sample's name is the student id) and
``expected.json``: what the grader must conclude for each (``status``; ``score``
``full``/``zero``/``partial``; where it is known, the exact auto ``points``; and a
``reason`` pattern). Samples are built the way ``course release`` builds a student
copy (``course_grader.exercise.release``), answered with the model answers or not, and then
edited cell by cell:

* for every exercise: correct, unanswered and (two answer cells or more) partial;
* on ex01: tampering with test and locked cells, bad input of every kind, crashes;
* ``adversarial.SAMPLES``: submissions written as an adversarial student would
  (oracle calls, monkeypatching, fake ✓ lines, evasions of the allow-list,
  invented timings, computed or oversized literals) and honest but unusual ones.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import nbformat

from course_grader.exercise.model import CellKind, Exercise, load_exercises
from course_grader.exercise.release import answered_notebook, student_notebook

from .adversarial import SAMPLES as ADVERSARIAL

HUGE_BYTES = 50 << 20
TAMPER_BASE = "ex01"


def plain_cell(code: str) -> dict:
    """A cell the student added (no course metadata), with a deterministic id."""
    cell = nbformat.v4.new_code_cell(code, id="student-" + hashlib.sha256(code.encode()).hexdigest()[:8])
    return cell


def _index(nb, cell_id: str) -> int:
    for i, cell in enumerate(nb.cells):
        if cell.get("id") == cell_id:
            return i
    raise KeyError(cell_id)


def with_cells(nb, replace: dict[str, str] | None = None, after: dict[str, str] | None = None):
    """A copy of ``nb`` with some cells' sources replaced and plain cells added after others (by id)."""
    nb = copy.deepcopy(nb)
    for cell_id, source in (replace or {}).items():
        nb.cells[_index(nb, cell_id)].source = source
    for cell_id, code in (after or {}).items():
        nb.cells.insert(_index(nb, cell_id) + 1, plain_cell(code))
    return nb


def _partial(ex: Exercise):
    """The model answers in the first half of the solution cells, stubs in the rest."""
    answered, blank = answered_notebook(ex), student_notebook(ex)
    solutions = [c.course_id for c in ex.cells if c.kind is CellKind.SOLUTION]
    half = solutions[len(solutions) // 2:]
    for cid in half:
        answered.cells[_index(answered, cid)].source = blank.cells[_index(blank, cid)].source
    return answered


def _tampering(ex: Exercise) -> dict[str, tuple[object, dict]]:
    good, blank = answered_notebook(ex), student_notebook(ex)
    first_test = next(c.course_id for c in ex.cells if c.kind is CellKind.TEST)
    last_solution = [c.course_id for c in ex.cells if c.kind is CellKind.SOLUTION][-1]
    flagged = {"status": "flagged", "score": "zero"}
    out = {
        "tamper-patch-torch-equal": (with_cells(good, after={last_solution: (
            "import torch\ntorch.equal = lambda a, b: True\n"
            "torch.testing.assert_close = lambda *a, **k: None")}), flagged),
        "tamper-patch-checks": (with_cells(good, after={last_solution: (
            "import compile_course.checks as checks\nchecks.passed = print")}), flagged),
        # Binding a name in the student's own namespace is not tampering: it cannot reach a verdict.
        "tamper-redefine-assertionerror": (with_cells(good, after={last_solution: (
            "class AssertionError(Exception):\n    pass")}), {"status": "graded", "score": "full"}),
        "tamper-fake-passed": (with_cells(blank, after={last_solution: (
            "print('✓ all tests passed: 8/8 points')")}), {"status": "graded", "score": "zero"}),
    }
    edited = copy.deepcopy(good)
    edited.cells[_index(edited, first_test)].source = "pass"
    out["tamper-edit-test"] = (edited, flagged)
    deleted = copy.deepcopy(good)
    del deleted.cells[_index(deleted, first_test)]
    out["tamper-delete-test"] = (deleted, flagged)
    duplicated = copy.deepcopy(good)
    i = _index(duplicated, first_test)
    duplicated.cells.insert(i, copy.deepcopy(duplicated.cells[i]))
    out["tamper-duplicate-cell"] = (duplicated, flagged)
    retyped = copy.deepcopy(good)
    i = _index(retyped, first_test)
    retyped.cells[i] = nbformat.v4.new_markdown_cell(retyped.cells[i].source, id=retyped.cells[i].id,
                                                     metadata=retyped.cells[i].metadata)
    out["tamper-retype-cell"] = (retyped, flagged)
    return out


def _bad_inputs(ex: Exercise) -> dict[str, tuple[object, dict]]:
    blank = student_notebook(ex)
    rejected = {"status": "rejected", "score": "zero"}
    huge = copy.deepcopy(blank)
    huge.cells.append(nbformat.v4.new_code_cell("print('x' * 10**8)", id="student-huge", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="x" * HUGE_BYTES)]))
    return {
        "bad-invalid-json": (b'{"cells": [', {**rejected, "reason": "invalid JSON"}),
        "bad-nbformat3": ({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]},
                          {**rejected, "reason": "nbformat 3"}),
        "bad-empty": (b"", {**rejected, "reason": "empty file"}),
        "bad-png": (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, {**rejected, "reason": "PNG"}),
        "bad-not-a-notebook": ([1, 2, 3], {**rejected, "reason": "not a notebook"}),
        "bad-missing-cells": (nbformat.v4.new_notebook(cells=[plain_cell("print('wrong notebook')")]),
                              {**rejected, "reason": "none of this exercise"}),
        "bad-huge-50mb": (huge, {**rejected, "reason": "too large"}),
    }


def _crashes(ex: Exercise) -> dict[str, tuple[object, dict]]:
    good = answered_notebook(ex)
    setup = next(c.course_id for c in ex.cells if c.kind is CellKind.LOCKED and c.cell_type == "code")
    full = {"status": "graded", "score": "full"}
    return {
        # The notebook kernel's fate is feedback only: the verdicts are computed elsewhere.
        "crash-os-exit": (with_cells(good, after={setup: "import os\nos._exit(1)"}), full),
        "crash-infinite-loop": (with_cells(good, after={setup: "while True:\n    pass"}), full),
        # In measured code, the student's own limits run out: zero, with the reason.
        "crash-measured-infinite-loop": (with_cells(good, replace={"ex01-rewrite": (
            "def safe_normalize_rewrite(x):\n    while True:\n        pass\n")}),
            {"status": "graded", "score": "zero", "points": 0, "reason": "cpu|time|limit"}),
        "crash-measured-memory": (with_cells(good, replace={"ex01-rewrite": (
            "def safe_normalize_rewrite(x):\n    hog = torch.empty(50 * 2**30, dtype=torch.uint8)\n"
            "    hog.fill_(1)\n    return x\n")}),
            {"status": "graded", "score": "zero", "points": 0, "reason": "memory|allocate"}),
        "crash-memory-50gb": (with_cells(good, replace={"ex01-rewrite": (
            "import torch\nhog = torch.empty(50 * 2**30, dtype=torch.uint8)")}),
            {"status": "graded", "score": "zero", "points": 0}),
    }


def samples_for(exercises: dict[str, Exercise]) -> dict[str, tuple[object, dict]]:
    """``{file name: (content, expectation)}``; content is a notebook node, a JSON value or bytes."""
    out: dict[str, tuple[object, dict]] = {}

    def add(student: str, ex: Exercise, content, expect: dict) -> None:
        out[f"{student}__{ex.name}.ipynb"] = (content, expect)

    for ex in exercises.values():
        if ex.auto_points == 0:
            expect_full = expect_zero = {"status": "graded", "score": "zero"}  # manual only: 0 auto points either way
        else:
            expect_full = {"status": "graded", "score": "full", "points": ex.auto_points}
            expect_zero = {"status": "graded", "score": "zero", "points": 0}
        add("correct", ex, answered_notebook(ex), expect_full)
        add("unanswered", ex, student_notebook(ex), expect_zero)
        if sum(c.kind is CellKind.SOLUTION for c in ex.cells) >= 2:
            add("partial", ex, _partial(ex), {"status": "graded", "score": "partial"})
    base = exercises[TAMPER_BASE]
    for group in (_tampering(base), _bad_inputs(base), _crashes(base)):
        for student, (content, expect) in group.items():
            add(student, base, content, expect)
    for sample in [*ADVERSARIAL, *(s for ex in exercises.values() for s in authored_samples(ex))]:
        ex = exercises[sample.exercise]
        start = answered_notebook(ex) if sample.answered else student_notebook(ex)
        content = with_cells(start, replace=sample.replace, after=sample.after)
        score = "full" if sample.points == ex.auto_points else "zero" if sample.points == 0 else "partial"
        expect = {"status": sample.status, "score": "zero" if sample.status == "flagged" else score,
                  "points": 0 if sample.status == "flagged" else sample.points, "why": sample.why}
        add(sample.name, ex, content, expect)
    return out


def authored_samples(ex: Exercise) -> list:
    """The samples an instructor wrote for an exercise, in ``solutions/<exercise>.samples.json``.

    ``{"name": {"points": N, "why": "...", "replace": {cell id: source}, "after": {cell id: source},
    "answered": true, "status": "graded"}}``: the released copy, answered with the model answers
    (``answered``, the default) or blank, with cells replaced or added after others; ``points`` is the
    auto score it deserves. A file that does not read as that is a ``ValueError`` naming it.
    """
    from .adversarial import Sample

    path = Path(ex.path).with_name(f"{ex.name}.samples.json")
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        out = []
        for name, spec in data.items():
            unknown = set(spec) - {"points", "why", "replace", "after", "answered", "status"}
            if unknown or not isinstance(spec.get("points"), (int, float)) or not isinstance(spec.get("why"), str):
                raise ValueError(f"sample {name!r}: needs 'points' and 'why'"
                                 + (f"; unknown keys {sorted(unknown)}" if unknown else ""))
            out.append(Sample(name, ex.id, float(spec["points"]), spec["why"], bool(spec.get("answered", True)),
                              dict(spec.get("replace", {})), dict(spec.get("after", {})),
                              spec.get("status", "graded")))
        return out
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"{path.name}: {exc}") from None


def notebook_bytes(content) -> bytes:
    if isinstance(content, bytes):
        return content
    # json, not nbformat.writes: a tampered notebook (a duplicated cell id) must be written as it is
    return (json.dumps(content, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()


def make_samples(solutions_dir: Path, out_dir: Path) -> dict[str, dict]:
    """Write every sample into ``out_dir``; returns ``{file name: expectation}`` (also written to expected.json)."""
    exercises = load_exercises(solutions_dir)
    if not exercises:
        raise FileNotFoundError(f"no exNN_*.ipynb in {solutions_dir}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    expected = {}
    for fname, (content, expect) in samples_for(exercises).items():
        (out_dir / fname).write_bytes(notebook_bytes(content))
        expected[fname] = expect
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return expected
