"""Integrity: cells by id, the instructor's cells restored, one profile for every check, no false flags."""

from __future__ import annotations

import dataclasses

import pytest

from course_grader.exercise.release import answered_notebook
from course_grader.intake.cells import RunCell, check
from course_grader.intake.scan import PROFILE, scan
from course_grader.status import Severity


def _with_cell(ex, code: str, after_kind="solution"):
    nb = answered_notebook(ex)
    last = max(i for i, c in enumerate(nb.cells) if c.metadata.get("course", {}).get("kind") == after_kind)
    nb.cells.insert(last + 1, {"cell_type": "code", "metadata": {}, "source": code, "outputs": [],
                               "execution_count": None})
    return nb


def _flags(ex, code):
    return [f.text for f in check(ex, _with_cell(ex, code)).flags]


def test_the_model_answers_of_every_exercise_raise_no_flag(exercises):
    for ex in exercises.values():
        checked = check(ex, answered_notebook(ex))
        assert checked.flags == [] and not checked.reject, ex.name


@pytest.mark.parametrize("code", [
    "max = 3\nprint(max)",
    "class AssertionError(Exception):\n    pass",
    "print = lambda *a: None",
    "explain = lambda *a, **k: 'graphs: 1'",
    "from torch import equal\nequal = 5",
    "import torch\nt = torch.zeros(3)\nt.requires_grad = True",
    "import torch\ntorch._dynamo.config.cache_size_limit = 8",
    "def f():\n    global len\n    len = 4",
    "!pip list\n%timeit 1 + 1",
    "print('✓ all tests passed')",
    "import sys\nsys.stdout.write('one line\\n')\nsys.stderr.flush()",
    "import sys\nout = sys.stdout\nout.write('x')",
    "import gc\ngc.collect()",
    "from torch import *",
    "torch = {}\ntorch.update(a=1)\ntorch['equal'] = print",   # a dict of one's own named torch
])
def test_shadowing_names_and_ordinary_code_are_not_tampering(exercise, code):
    assert _flags(exercise, code) == []


@pytest.mark.parametrize("code, what", [
    ("import torch\ntorch.equal = lambda a, b: True", "torch.equal"),
    ("torch.equal = lambda a, b: True", "torch.equal"),   # torch comes from the locked setup cell
    ("import torch.testing as tt\ntt.assert_close = print", "torch.testing.assert_close"),
    ("import compile_course.checks as checks\nchecks.passed = print", "compile_course.checks.passed"),
    ("probe = (walk(g, 'gi_frame.f_back') for i in [0])", ".gi_frame in a string"),
    ("from torch import testing as _t\nholder = [_t]\nholder[0].assert_close = None", "indirectly"),
    ("import torch\ndel torch.allclose", "deletes torch.allclose"),
    ("import builtins\nbuiltins.max = min", "imports builtins"),
    ("import sys\nsys.modules['torch'] = None", "sys.modules"),
    ("import ctypes", "imports ctypes"),
    ("import gc\nobjects = gc.get_objects()", "gc.get_objects"),
    ("from gc import get_referrers as refs", "get_referrers from gc"),
    ("from gc import *", "imports * from gc"),
    ("def f():\n    return f.__globals__", ".__globals__"),
    ("x = ().__class__.__mro__", "__class__"),
    ("exec('1')", "calls exec()"),
    ("from course_grader import model", "course_grader"),
    ("import sys\nsys.stdout = None", "assigns to sys.stdout"),
    ("import sys\nsys.stdout.write = print", "assigns to sys.stdout.write"),
    ("import sys\nout = sys.stdout\nout.write = print", "assigns to sys.stdout.write"),
])
def test_changing_shared_objects_or_reaching_for_the_interpreter_is_flagged(exercise, code, what):
    flags = _flags(exercise, code)
    assert flags and any(what in f for f in flags), flags


def test_a_module_imported_by_the_instructors_setup_is_protected_in_every_student_cell(exercises):
    # Seen in a held-out corpus: the setup cell imports time; the answer cell patched its clock.
    ex = exercises["ex05"]
    nb = answered_notebook(ex)
    answer = next(c for c in nb.cells if c.metadata.get("course", {}).get("kind") == "solution")
    answer.source = "time.perf_counter = lambda _t=[0.0]: _t.__setitem__(0, _t[0] + 1e-6) or _t[0]\n" + answer.source
    flags = [f.text for f in check(ex, nb).flags]
    assert any("time.perf_counter" in f for f in flags), flags


def test_the_scan_reads_the_one_course_profile():
    cell = [RunCell("your cell #1", "import numpy\nnumpy.pi = 3", "student")]
    [hit] = scan(cell)
    assert (hit.cell, hit.severity, hit.severity == "flag") == ("your cell #1", Severity.FLAG, True)
    assert hit.text == "line 2: assigns to numpy.pi (patching a library)"
    relaxed = dataclasses.replace(PROFILE, protected_modules=PROFILE.protected_modules - {"numpy"})
    assert scan(cell, relaxed) == []


def test_test_and_locked_cells_are_restored_and_edits_reported(exercise):
    nb = answered_notebook(exercise)
    test = next(c for c in nb.cells if c.metadata.get("course", {}).get("kind") == "test")
    test.source = "pass  # edited"
    setup = next(c for c in nb.cells if c.metadata.get("course", {}).get("kind") == "locked" and c.cell_type == "code")
    setup.source = "import os  # edited"
    checked = check(exercise, nb)
    assert any("test cell edited" in f.text for f in checked.flags)
    assert any("locked cell edited" in f.text for f in checked.flags)
    run = {c.cell_id: c for c in checked.run_cells}
    cid = setup.metadata["course"]["id"]
    assert run[cid].source == exercise.cell(cid).source and run[cid].role == "locked"
    assert not any(c.source == "pass  # edited" or c.role == "test" for c in checked.run_cells)


def test_hidden_tests_never_reach_the_feedback_kernel(exercises):
    for ex in exercises.values():
        sources = [c.source for c in check(ex, answered_notebook(ex)).run_cells]
        for hidden in ex.hidden_tests:
            assert hidden.source not in sources


def test_a_cell_claiming_a_hidden_id_or_a_new_test_is_flagged(exercise):
    nb = answered_notebook(exercise)
    nb.cells.append({"cell_type": "code", "metadata": {"course": {"id": "ex01-hidden-boundary", "kind": "hidden-test"}},
                     "source": "pass", "outputs": [], "execution_count": None})
    nb.cells.append({"cell_type": "code", "metadata": {"course": {"id": "ex01-my-test", "kind": "test", "points": 99}},
                     "source": "pass", "outputs": [], "execution_count": None})
    texts = [f.text for f in check(exercise, nb).flags]
    assert any("id of a hidden test" in t for t in texts) and any("claims to be a graded test" in t for t in texts)


def test_code_too_deep_for_the_parser_is_a_notice_not_a_crash(exercise):
    checked = check(exercise, _with_cell(exercise, "x = " + "-" * 100_000 + "1"))
    assert checked.flags == [] and any("nested too deeply" in f.text for f in checked.notices)


def test_the_solution_cells_are_handed_over_by_id(exercise):
    checked = check(exercise, answered_notebook(exercise))
    assert checked.cells == {"ex01-rewrite": exercise.cell("ex01-rewrite").source}


def test_a_name_hidden_in_a_long_string_of_the_answer_is_found(exercise):
    """issue 26: the string scan reads every string constant, whatever its length (the allow-list's cap on
    a measured function's constants is not the scan's): a frame attribute after 6,000 characters is found."""
    nb = answered_notebook(exercise)
    answer = next(c for c in nb.cells if c.metadata.get("course", {}).get("kind") == "solution")
    answer.source += f"\nPATH = '{'x' * 6_000}.gi_frame.f_back'\n"
    flags = [f.text for f in check(exercise, nb).flags]
    assert any(".gi_frame in a string" in f for f in flags), flags


def test_a_lone_surrogate_in_an_edited_locked_markdown_cell_is_a_notice_not_a_rejection(exercise):
    # the adversarial student's mal08: a JSON "\udc80" in a locked markdown cell made cell_digest raise
    # UnicodeEncodeError, and the whole notebook was rejected as "could not be matched"
    from course_grader.intake.cells import cell_digest

    nb = answered_notebook(exercise)
    md = next(c for c in nb.cells if c.metadata.get("course", {}).get("kind") == "locked" and c.cell_type == "markdown")
    md.source += "\n\nmy note: \udc80\n"
    checked = check(exercise, nb)
    assert not checked.reject and checked.flags == []
    notices = [f.text for f in checked.notices if f.where == md.metadata["course"]["id"]]
    assert notices[0].startswith("locked cell edited")
    assert cell_digest("markdown", "a \udc80") != cell_digest("markdown", "a \udc81")
    assert cell_digest("markdown", "plain é") == __import__("hashlib").sha256("markdown\nplain é".encode()).hexdigest()
