from pathlib import Path

import pytest

from compile_course.grading.assemble import RunCell, assemble
from compile_course.grading.integrity import match_cells
from compile_course.grading.scan import scan_cells
from compile_course.grading.source import load_sources

SETUP = RunCell(0, "locked setup", "import torch\nfrom compile_course.checks import passed, expect_single_graph", "locked",
                pins=["torch", "passed", "expect_single_graph"])


def hits(code):
    return [text for _, text in scan_cells([SETUP, RunCell(1, "student", code, "solution")])]


@pytest.mark.parametrize("code, word", [
    ("torch.equal = lambda a, b: True", "assigns to torch.equal"),
    ("import torch.testing as tt\ntt.assert_close = print", "assigns to tt.assert_close"),
    ("AssertionError = Exception", "rebinds 'AssertionError'"),
    ("class AssertionError(Exception): pass", "rebinds 'AssertionError'"),
    ("def passed(msg): print(msg)", "rebinds 'passed'"),
    ("torch = None", "rebinds 'torch'"),
    ("setattr(torch, 'equal', 1)", "calls setattr()"),
    ("import builtins", "imports builtins"),
    ("import sys\nsys.modules['torch'] = None", "sys.modules"),
    ("import sys as s\ns.settrace(None)", "sys.settrace"),
    ("import gc", "imports gc"),
    ("import ctypes", "imports ctypes"),
    ("import importlib\nimportlib.reload(torch)", "imports importlib"),
    ("exec('x = 1')", "calls exec()"),
    ("f = lambda: 0\nf.__code__ = None", "__code__"),
    ("get_ipython().run_cell('x')", "get_ipython"),
    ("print(open('/work/main/solutions/ex01.ipynb').read())", "course path"),
    ("print('✓ passed')", "imitates a test result"),
    ("!cat ../solutions/*", "__shell_escape__"),
    ("import inspect\ninspect.currentframe().f_back", "inspect.currentframe"),
    ("from compile_course.grading import child", "compile_course.grading"),
])
def test_tampering_is_found(code, word):
    found = hits(code)
    assert any(word in h for h in found), found


@pytest.mark.parametrize("code", [
    "def f(x):\n    return torch.where(x > 0, x, -x)",
    "torch._dynamo.config.cache_size_limit = 8",
    "import os\nos.environ['X'] = '1'",
    "model = torch.nn.Linear(2, 2)\nmodel.eval()\nlist(model.modules())",
    "compiled = torch.compile(f, backend='eager')",
    "def helper():\n    sum = 0\n    return sum",
    "print('forward pass done')\n%timeit f(1)",
    "x = torch.ones(2)\nx.requires_grad_(True)\nx.grad = None",
])
def test_ordinary_code_is_not_flagged(code):
    assert hits(code) == []


def test_real_solutions_pass_the_scan():
    root = Path(__file__).resolve().parents[1] / "solutions"
    sources = load_sources(root)
    if not sources:
        pytest.skip("no solutions yet")
    for src in sources.values():
        nb = {"cells": [{"cell_type": c.cell_type, "source": c.source, "metadata": {"course": {"id": c.course_id, "kind": c.kind}} if c.course_id else {}}
                        for c in src.cells if c.kind != "hidden-test"]}
        found = scan_cells(assemble(src, match_cells(src, nb)))
        assert found == [], (src.name, found)
