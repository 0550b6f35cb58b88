import copy
import importlib.util
from pathlib import Path

from compile_course.grading.integrity import match_cells
from compile_course.grading.source import load_source

spec = importlib.util.spec_from_file_location("helpers", Path(__file__).parent / "fixtures" / "grading" / "helpers.py")
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
SRC = load_source(h.FIXTURE)


def texts(matched, severity):
    return [f"{f.cell_id}: {f.text}" for f in matched.findings if f.severity == severity]


def test_untouched_student_copy_has_no_findings():
    m = match_cells(SRC, h.student(answered=False))
    assert m.findings == [] and not m.reject


def test_test_cell_edit_delete_duplicate_retype_are_flags():
    nb = h.student()
    i = h.cell_index(nb, "ex90-test-double")
    edited = copy.deepcopy(nb); edited["cells"][i]["source"] = "pass"
    deleted = copy.deepcopy(nb); del deleted["cells"][i]
    dup = copy.deepcopy(nb); dup["cells"].insert(i, copy.deepcopy(nb["cells"][i]))
    retyped = copy.deepcopy(nb); retyped["cells"][i]["cell_type"] = "markdown"
    for nb_, word in [(edited, "edited"), (deleted, "deleted"), (dup, "duplicated"), (retyped, "changed from code to markdown")]:
        flags = texts(match_cells(SRC, nb_), "flag")
        assert any(f.startswith("ex90-test-double") and word in f for f in flags), (word, flags)


def test_whitespace_only_changes_are_not_edits():
    nb = h.student()
    i = h.cell_index(nb, "ex90-test-double")
    nb["cells"][i]["source"] = nb["cells"][i]["source"].replace("\n", "   \r\n") + "\n\n"
    assert texts(match_cells(SRC, nb), "flag") == []


def test_locked_markdown_edit_is_a_notice_and_locked_code_edit_a_flag():
    nb = h.student()
    nb["cells"][h.cell_index(nb, "ex90-intro")]["source"] += " my notes"
    nb["cells"][h.cell_index(nb, "ex90-setup")]["source"] += "\nreference = lambda x: x"
    m = match_cells(SRC, nb)
    assert any("ex90-intro" in n for n in texts(m, "notice"))
    assert any("ex90-setup" in f and "edited" in f for f in texts(m, "flag"))


def test_hidden_test_id_and_forged_test_cells_are_flags():
    nb = h.student()
    sol = h.solution()
    nb["cells"].append(sol["cells"][h.cell_index(sol, "ex90-hidden-double")])
    nb["cells"].append({"cell_type": "code", "metadata": {"course": {"id": "mine", "kind": "test", "points": 99}}, "source": "pass", "outputs": []})
    flags = texts(match_cells(SRC, nb), "flag")
    assert any("hidden test" in f for f in flags)
    assert any("claims to be a graded test" in f for f in flags)


def test_cells_match_by_nbformat_id_when_metadata_is_stripped():
    nb = h.student()
    for c in nb["cells"]:
        c["metadata"].pop("course", None)
    m = match_cells(SRC, nb)
    assert not m.reject and texts(m, "flag") == []


def test_solution_missing_or_retyped_is_a_notice():
    nb = h.student()
    del nb["cells"][h.cell_index(nb, "ex90-double")]
    nb["cells"][h.cell_index(nb, "ex90-triple")]["cell_type"] = "raw"
    notices = texts(match_cells(SRC, nb), "notice")
    assert any("ex90-double" in n and "missing" in n for n in notices)
    assert any("ex90-triple" in n and "no longer a code cell" in n for n in notices)


def test_wrong_notebook_is_rejected():
    m = match_cells(SRC, {"cells": [{"cell_type": "code", "metadata": {}, "source": "print(1)"}]})
    assert "none of this exercise" in m.reject
