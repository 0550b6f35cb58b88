import copy
import importlib.util
from pathlib import Path

from compile_course.grading.assemble import assemble, bound_names
from compile_course.grading.integrity import match_cells
from compile_course.grading.source import load_source

spec = importlib.util.spec_from_file_location("helpers", Path(__file__).parent / "fixtures" / "grading" / "helpers.py")
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
SRC = load_source(h.FIXTURE)
SOURCE_TEXT = {c.course_id: c.source for c in SRC.cells if c.course_id}


def run_list(nb):
    return assemble(SRC, match_cells(SRC, nb))


def test_order_roles_and_hidden_test_injection():
    cells = run_list(h.student())
    assert [(c.role, c.course_id) for c in cells] == [
        ("locked", "ex90-setup"), ("solution", "ex90-double"), ("solution", "ex90-triple"),
        ("test", "ex90-test-double"), ("test", "ex90-test-triple"), ("hidden-test", "ex90-hidden-double")]
    hidden = cells[-1]
    assert hidden.code == SOURCE_TEXT["ex90-hidden-double"] and hidden.graded and hidden.points == 3


def test_edited_deleted_and_retyped_tests_run_from_the_source():
    nb = h.student()
    i = h.cell_index(nb, "ex90-test-double")
    nb["cells"][i]["source"] = "pass"
    nb["cells"][h.cell_index(nb, "ex90-test-triple")]["cell_type"] = "markdown"
    cells = {c.course_id: c for c in run_list(nb) if c.graded}
    assert cells["ex90-test-double"].code == SOURCE_TEXT["ex90-test-double"]
    assert cells["ex90-test-triple"].code == SOURCE_TEXT["ex90-test-triple"]
    nb2 = h.student()
    del nb2["cells"][i]
    assert any(c.course_id == "ex90-test-double" and c.code == SOURCE_TEXT["ex90-test-double"] for c in run_list(nb2))


def test_duplicated_test_runs_once_and_student_extra_cells_keep_their_place():
    nb = h.student()
    i = h.cell_index(nb, "ex90-test-double")
    nb["cells"].insert(i, copy.deepcopy(nb["cells"][i]))
    nb["cells"].insert(h.cell_index(nb, "ex90-double") + 1, {"cell_type": "code", "metadata": {}, "source": "print('mine')"})
    cells = run_list(nb)
    assert sum(c.course_id == "ex90-test-double" for c in cells) == 1
    roles = [c.role for c in cells]
    assert roles.index("student") == roles.index("solution") + 1


def test_missing_solution_becomes_a_stub():
    nb = h.student()
    del nb["cells"][h.cell_index(nb, "ex90-double")]
    stub = next(c for c in run_list(nb) if c.course_id == "ex90-double")
    assert "NotImplementedError" in stub.code


def test_bound_names():
    assert bound_names("import torch\nfrom a.b import c as d\nimport x.y\ndef f(): pass\nclass K: pass\nz = 1") == ["torch", "d", "x", "f", "K"]
    assert bound_names("def (:") == []
