"""``course new-exercise exNN slug "Title"``: a new solution notebook with every kind of cell in place.

It writes ``solutions/exNN_slug.ipynb`` (a setup cell, the statement, one solution cell, one public
test, one hidden test, a free-text question) and ``solutions/exNN_slug.samples.json`` (one wrong
sample to adapt), and refuses to overwrite anything. The guide is ``docs/authoring.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

from course_grader.errors import ExerciseFormatError

from .model import Exercise

SETUP = '''from compile_course import start; start()

import torch
from compile_course.testing import Namespace, code, expect_like_reference, passed, replay, spy

# The test cells ask `student` about your functions. Here it is this notebook; at grading, the grader.
student = reference = Namespace(globals())'''

STATEMENT = """# Exercise {n}: {title}

Say what to do, what is given, and how the answer is checked (the public test below is the
student's self-check; the hidden test runs at grading only)."""

GIVEN = '''def reference_fn(x):
    """What the student's function must agree with (a setup cell: definitions only)."""
    return torch.relu(x)'''

SOLUTION = '''def answer_fn(x):
    """Same values and gradients as reference_fn, captured as one graph."""
    ### BEGIN SOLUTION
    return torch.clamp(x, min=0)
    ### END SOLUTION'''

PUBLIC = '''cases = [("float32 [3]", (torch.tensor([-1.0, 0.5, 2.0], requires_grad=True),))]
expect_like_reference(student, "answer_fn", reference_fn, cases, "public cases", fullgraph=True)
passed("answer_fn agrees with reference_fn, compiled with fullgraph=True and eagerly")'''

HIDDEN = '''cases = [("float64 with -0.0", (torch.tensor([-0.0, 0.0, 3.0], dtype=torch.float64),))]
expect_like_reference(student, "answer_fn", reference_fn, cases, "boundary cases", fullgraph=True)
passed("boundary cases agree")'''

QUESTION = "**Question.** In two sentences: why does your version capture as one graph?"
ANSWER = """<!-- BEGIN SOLUTION -->
It uses tensor operations only; no Python branch reads a tensor's value.
<!-- END SOLUTION -->"""

SAMPLES = {"wrong": {"points": 0, "why": "returns the input unchanged: every case disagrees",
                     "replace": {"{id}-answer": "def answer_fn(x):\n    return x\n"}}}


def _cell(kind: str, cid: str, source: str, cell_type: str = "code", **meta):
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source, id=cid)
    cell.metadata["course"] = {"id": cid, "kind": kind, **meta}
    return cell


def new_exercise(solutions: Path, number: str, slug: str, title: str) -> tuple[Path, Path]:
    if not re.fullmatch(r"ex\d\d", number) or not re.fullmatch(r"[a-z0-9_]+", slug):
        raise ValueError("use an id like ex07 and a slug of lowercase letters, digits and _")
    nb_path = solutions / f"{number}_{slug}.ipynb"
    samples_path = solutions / f"{number}_{slug}.samples.json"
    taken = [p for p in solutions.glob(f"{number}_*") if p.suffix in (".ipynb", ".json")]
    if taken:
        raise FileExistsError(f"{taken[0]} exists: choose another number")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("locked", f"{number}-intro", STATEMENT.format(n=int(number[2:]), title=title), "markdown"),
        _cell("locked", f"{number}-setup", SETUP, setup=True),
        _cell("locked", f"{number}-given", GIVEN, setup=True),
        _cell("solution", f"{number}-answer", SOLUTION),
        _cell("test", f"{number}-test-public", PUBLIC, points=2),
        _cell("hidden-test", f"{number}-hidden-boundary", HIDDEN, points=2),
        _cell("locked", f"{number}-question", QUESTION, "markdown"),
        _cell("answer", f"{number}-why", ANSWER, "markdown", points=1, rubric="1 point: names tensor ops / no "
                                                                          "data-dependent Python branch."),
    ]
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    text = nbformat.writes(nb) + "\n"
    Exercise.from_bytes(text.encode(), nb_path)  # the scaffold is itself a valid source
    nb_path.write_text(text, encoding="utf-8")
    samples = json.loads(json.dumps(SAMPLES).replace("{id}", number))
    samples_path.write_text(json.dumps(samples, indent=1) + "\n", encoding="utf-8")
    return nb_path, samples_path


def main(argv: list[str] | None = None) -> int:
    from compile_course.paths import ROOT

    p = argparse.ArgumentParser(allow_abbrev=False, prog="course new-exercise", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("number", help="the exercise id, e.g. ex07")
    p.add_argument("slug", help="a short name, e.g. loop_breaks (the file is exNN_slug.ipynb)")
    p.add_argument("title", help="the title shown to students")
    p.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    args = p.parse_args(argv)
    try:
        nb_path, samples_path = new_exercise(args.solutions, args.number, args.slug, args.title)
    except (ValueError, FileExistsError, ExerciseFormatError) as exc:
        print(f"course new-exercise: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {nb_path} and {samples_path}\nnext: edit them in JupyterLab, then see docs/authoring.md")
    return 0
