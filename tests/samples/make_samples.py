"""Generate the bundled sample submissions from the instructor's solutions.

    python tests/samples/make_samples.py [--solutions DIR] [--out DIR]

Writes ``SAMPLE__exNN_slug.ipynb`` files (flat layout: the sample's name is the
student id) and ``expected.json``: what the grader must conclude for each.
Samples: a correct, an unanswered and (where there are two solution cells or
more) a partial submission for every exercise; on one exercise, a sample for
each tampering case and each kind of bad input. The student copies are built
the way ``course release`` builds them: hidden tests removed, rubrics removed,
solution regions replaced by a stub.
"""

from __future__ import annotations

import argparse
import hashlib
import copy
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$", re.S | re.M)
ANSWER = re.compile(r"<!--\s*BEGIN SOLUTION\s*-->.*?<!--\s*END SOLUTION\s*-->", re.S)
HUGE_BYTES = 50 << 20


def _course(cell) -> dict:
    return cell.get("metadata", {}).get("course") or {}


def student_copy(solution: dict, answered: bool) -> dict:
    """What a student hands in: answered (the model solution) or untouched."""
    nb = copy.deepcopy(solution)
    cells = []
    for cell in nb["cells"]:
        meta = _course(cell)
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if meta.get("kind") == "hidden-test":
            continue
        meta.pop("rubric", None)
        if meta.get("kind") == "solution" and not answered:
            src = REGION.sub(lambda m: f"{m.group(1)}raise NotImplementedError('{meta['id']}: replace this line with your answer')", src)
        if meta.get("kind") == "answer" and not answered:
            src = ANSWER.sub("_Your answer here._", src)
        cell["source"] = src
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _ids(nb, kind):
    return [i for i, c in enumerate(nb["cells"]) if _course(c).get("kind") == kind]


def _plain(code: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": "student-" + hashlib.sha256(code.encode()).hexdigest()[:8],
            "metadata": {}, "outputs": [], "source": code}


def _insert_after_setup(nb, code: str) -> dict:
    nb = copy.deepcopy(nb)
    first_solution = _ids(nb, "solution")[0]
    nb["cells"].insert(first_solution, _plain(code))
    return nb


def _insert_after_solutions(nb, code: str) -> dict:
    nb = copy.deepcopy(nb)
    nb["cells"].insert(_ids(nb, "solution")[-1] + 1, _plain(code))
    return nb


def samples_for(solutions: dict[str, dict], base: str) -> dict[str, tuple[str, object, dict]]:
    """``{file name: (student, content, expectation)}``; content is a dict (JSON) or bytes."""
    out = {}

    def add(student, name, content, **expect):
        out[f"{student}__{name}.ipynb"] = (student, content, expect)

    for name, sol in solutions.items():
        add("correct", name, student_copy(sol, True), status="graded", score="full")
        add("unanswered", name, student_copy(sol, False), status="graded", score="zero")
        answered, blank = student_copy(sol, True), student_copy(sol, False)
        sol_cells = _ids(answered, "solution")
        if len(sol_cells) >= 2:
            partial = copy.deepcopy(answered)
            for i in sol_cells[len(sol_cells) // 2:]:
                partial["cells"][i] = blank["cells"][i]
            add("partial", name, partial, status="graded", score="partial")
    good, blank = student_copy(solutions[base], True), student_copy(solutions[base], False)
    tests = _ids(good, "test")
    tamper = {
        "tamper-patch-torch-equal": _insert_after_solutions(good, "import torch\ntorch.equal = lambda a, b: True\ntorch.testing.assert_close = lambda *a, **k: None"),
        "tamper-redefine-assertionerror": _insert_after_solutions(good, "class AssertionError(Exception):\n    pass"),
        "tamper-patch-checks": _insert_after_solutions(good, "import compile_course.checks as checks\nchecks.passed = print\nexplain = lambda *a, **k: 'graphs: 1   graph breaks: 0'"),
        "tamper-alias-patch": _insert_after_solutions(good, "from torch import testing as _t\nholder = [_t]\nholder[0].assert_close = lambda *a, **k: None"),
        "tamper-fake-passed": _insert_after_solutions(blank, "print('✓ all tests passed: 10/10 points')"),
    }
    edited = copy.deepcopy(good)
    edited["cells"][tests[0]]["source"] = "pass"
    tamper["tamper-edit-test"] = edited
    deleted = copy.deepcopy(good)
    del deleted["cells"][tests[0]]
    tamper["tamper-delete-test"] = deleted
    duplicated = copy.deepcopy(good)
    duplicated["cells"].insert(tests[0], copy.deepcopy(duplicated["cells"][tests[0]]))
    tamper["tamper-duplicate-cell"] = duplicated
    retyped = copy.deepcopy(good)
    cell = retyped["cells"][tests[0]]
    cell["cell_type"] = "markdown"
    cell.pop("outputs"), cell.pop("execution_count")
    tamper["tamper-retype-cell"] = retyped
    for student, nb in tamper.items():
        add(student, base, nb, status="flagged", score="zero")
    add("crash-os-exit", base, _insert_after_setup(good, "import os\nos._exit(1)"), status="graded", score="zero", reason="kernel died")
    add("crash-infinite-loop", base, _insert_after_setup(good, "while True:\n    pass"), status="graded", score="zero", reason="time limit")
    bomb = copy.deepcopy(good)
    bomb["cells"][_ids(bomb, "solution")[0]]["source"] = "import torch\nhog = torch.empty(50 * 2**30, dtype=torch.uint8)"
    add("crash-memory-50gb", base, bomb, status="graded", score="zero", reason="allocate|memory")
    add("bad-invalid-json", base, b'{"cells": [', status="rejected", score="zero", reason="invalid JSON")
    add("bad-nbformat3", base, {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]},
        status="rejected", score="zero", reason="nbformat 3")
    add("bad-empty", base, b"", status="rejected", score="zero", reason="empty file")
    add("bad-png", base, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, status="rejected", score="zero", reason="PNG")
    add("bad-not-a-notebook", base, [1, 2, 3], status="rejected", score="zero", reason="not a notebook")
    add("bad-missing-cells", base, {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                    "cells": [_plain("print('wrong notebook')")]}, status="rejected", score="zero", reason="none of this exercise")
    huge = copy.deepcopy(blank)
    huge["cells"][0].setdefault("attachments", {})
    huge["cells"].append({**_plain("print('x' * 10**8)"), "outputs": [{"output_type": "stream", "name": "stdout", "text": "x" * HUGE_BYTES}]})
    add("bad-huge-50mb", base, huge, status="rejected", score="zero", reason="too large")
    return out


def make_samples(solutions_dir: Path, out_dir: Path, base: str | None = None) -> dict[str, dict]:
    """Write every sample into ``out_dir``; returns ``{file name: expectation}`` (also written to expected.json)."""
    solutions = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(solutions_dir).glob("ex[0-9][0-9]*.ipynb"))}
    if not solutions:
        raise FileNotFoundError(f"no exNN_*.ipynb in {solutions_dir}")
    base = base or next(iter(solutions))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    expected = {}
    for fname, (student, content, expect) in samples_for(solutions, base).items():
        data = content if isinstance(content, bytes) else json.dumps(content, indent=1, ensure_ascii=False).encode()
        (out_dir / fname).write_bytes(data)
        expected[fname] = expect
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return expected


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "submissions")
    p.add_argument("--base", help="exercise used for the tampering and bad-input samples (default: the first)")
    args = p.parse_args(argv)
    expected = make_samples(args.solutions, args.out, args.base)
    print(f"{len(expected)} samples -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
