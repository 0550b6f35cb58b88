"""Every stored notebook is clean, follows the template, and marks its volatile cells."""

import re
from pathlib import Path

import nbformat
import pytest

from course_tools.notebooks.normalize import RAISES_TAG, VOLATILE_TAG, audit_notebook

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
ALL = LESSONS + SOLUTIONS
MAX_VOLATILE_CELLS = 3
TEMPLATE_HEADINGS = ["What you will learn", "Before you start", "Summary", "Try it"]


def params(paths):
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no notebooks stored yet"), id="none")]
    return [pytest.param(p, id=str(p.relative_to(ROOT))) for p in paths]


def read(path):
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def tags(cell):
    return set(cell.metadata.get("tags", []))


@pytest.mark.parametrize("path", params(ALL))
def test_stored_outputs_pass_the_audit(path):
    problems = audit_notebook(read(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", params(ALL))
def test_volatile_cells_are_marked_and_few(path):
    cells = read(path).cells
    volatile = [i for i, c in enumerate(cells) if VOLATILE_TAG in tags(c)]
    unmarked = [i for i in volatile if "volatile" not in tags(cells[i])]
    assert unmarked == [], f"cells {unmarked} skip nbval comparison without the 'volatile' tag"
    assert len(volatile) <= MAX_VOLATILE_CELLS, f"{len(volatile)} cells skip comparison (at most {MAX_VOLATILE_CELLS})"


@pytest.mark.parametrize("path", params(ALL))
def test_first_code_cell_calls_start(path):
    cells = code_cells(read(path))
    assert cells, "a notebook without code"
    assert re.search(r"\bstart\(", cells[0].source), f"first code cell does not call start():\n{cells[0].source}"
    assert RAISES_TAG not in tags(cells[0]) and VOLATILE_TAG not in tags(cells[0])


def headings(nb) -> list[tuple[int, str]]:
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        in_fence = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            match = None if in_fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if match:
                found.append((len(match.group(1)), match.group(2)))
    return found


@pytest.mark.parametrize("path", params([p for p in LESSONS if re.match(r"\d\d_", p.name)]))
def test_lesson_follows_the_template(path):
    nb = read(path)
    found = headings(nb)
    assert found and found[0][0] == 1, "a lesson opens with a '# Title'"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.lstrip().startswith("# ")
    texts = [text.lower() for _, text in found]
    positions = []
    for want in TEMPLATE_HEADINGS:
        hits = [i for i, text in enumerate(texts) if text.startswith(want.lower())]
        assert hits, f"missing heading {want!r}; headings: {[t for _, t in found]}"
        positions.append(hits[0])
    assert positions == sorted(positions), f"template headings out of order: {TEMPLATE_HEADINGS}"
    # Sections between "Before you start" and "Summary"; "Try it" comes last.
    assert positions[2] - positions[1] > 1, "no lesson sections between 'Before you start' and 'Summary'"


def test_lesson_file_names_are_numbered():
    for path in LESSONS:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name), path.name
    for path in SOLUTIONS:
        assert re.fullmatch(r"ex\d\d_[a-z0-9_]+\.ipynb", path.name), path.name


# A lesson reads in about 20 minutes: prose of at most about 2,000 words, and no wall of output.
# Torch's raw output stays in the notebook, folded (Lab's collapsed outputs, myst-nb's hide-output
# tag on the site): folding is not filtering, the full text is one click away.
MAX_PROSE_WORDS = 2000
MAX_VISIBLE_OUTPUT_LINES = 40
FOLD_TAG = "hide-output"


def prose_words(nb) -> int:
    """Whitespace-separated tokens of the markdown cells, fenced blocks and tables included: what a reader
    reads, counted as the course's review counts it."""
    return sum(len(cell.source.split()) for cell in nb.cells if cell.cell_type == "markdown")


def output_lines(cell) -> int:
    lines = 0
    for out in cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "") or ""
        lines += len("".join(text).splitlines())
    return lines


def lab_folded(cell) -> bool:
    """Folded as JupyterLab stores it: ``jupyter.outputs_hidden``, and the older ``collapsed`` key that Lab
    writes beside it on every save (without it, opening and saving a lesson would change the file)."""
    return cell.metadata.get("jupyter", {}).get("outputs_hidden") is True and cell.metadata.get("collapsed") is True


def folded(cell) -> bool:
    return FOLD_TAG in tags(cell) and lab_folded(cell)


@pytest.mark.parametrize("path", params([p for p in LESSONS if re.match(r"\d\d_", p.name)]))
def test_a_lesson_reads_in_about_twenty_minutes(path):
    words = prose_words(read(path))
    assert words <= MAX_PROSE_WORDS, f"{words} words of prose (at most about {MAX_PROSE_WORDS})"


@pytest.mark.parametrize("path", params([p for p in LESSONS if re.match(r"\d\d_", p.name)] + SOLUTIONS))
def test_long_outputs_are_folded_not_cut(path):
    """An output over 40 lines is folded in Lab and on the site alike, and a folded one is kept whole: in a
    lesson, and in a solution (read in Lab; its released copy keeps the fold, which running the cell opens)."""
    nb = read(path)
    walls = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and output_lines(c) > MAX_VISIBLE_OUTPUT_LINES and not folded(c)]
    assert walls == [], (f"cells {walls} show more than {MAX_VISIBLE_OUTPUT_LINES} lines: fold them (tag "
                         f"'{FOLD_TAG}', metadata jupyter.outputs_hidden and collapsed), quote the lines that matter")
    half = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (
        (FOLD_TAG in tags(c)) != lab_folded(c))]
    assert half == [], f"cells {half} are folded in Lab or on the site but not in both"
