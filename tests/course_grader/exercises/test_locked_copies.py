"""The harnesses rebuild the notebooks' locked data on the grader's side: the copies must not drift.

A student cannot change what the verdicts depend on (the harness has its own copy),
so an instructor who edits a locked cell must edit the copy too; these tests say which.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from course_grader.exercises import ex01 as ex01_verdicts
from course_grader.harness import ex02, ex03, ex04, ex05


def _defs(source: str) -> dict[str, str]:
    """``ast.dump`` of each top-level def/class, docstrings left out (a copy may explain itself)."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                body = getattr(inner, "body", None)
                if isinstance(body, list) and len(body) > 1 and isinstance(body[0], ast.Expr) \
                        and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                    inner.body = body[1:]
            out[node.name] = ast.dump(node)
    return out


def _call_args(source: str, function: str) -> list[str]:
    """``ast.dump`` of the positional arguments of every ``call(...)`` inside ``function``."""
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function)
    return [ast.dump(c.args[0]) for c in ast.walk(fn)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "call"]


@pytest.mark.parametrize("exercise, cell, module, names", [
    ("ex01", "ex01-reference", ex01_verdicts, ["safe_normalize"]),
    ("ex02", "ex02-functions", ex02,
     ["scale_and_report", "scale_by_total", "flip_if_negative", "clipped", "logged_scale"]),
    ("ex02", "ex02-sequences", ex02, ["double"]),
    ("ex03", "ex03-sequence-a", ex03, ["h"]),
    ("ex04", "ex04-references", ex04, ["gate", "Block"]),
    ("ex05", "ex05-workload", ex05, ["fused"]),
])
def test_functions_equal_the_locked_cells(exercises, exercise, cell, module, names):
    locked = _defs(exercises[exercise].cell(cell).source)
    copied = _defs(inspect.getsource(module))
    for name in names:
        assert copied[name] == locked[name], f"{module.__name__}.{name} differs from the locked cell {cell}"


@pytest.mark.parametrize("exercise, cell, module, pairs", [
    ("ex02", "ex02-sequences", ex02, [(f"seq_{c}", f"seq_{c}") for c in "abcdef"]),
    ("ex03", "ex03-sequence-a", ex03, [("sequence_a", "sequence_a")]),
    ("ex03", "ex03-sequence-b", ex03, [("sequence_b", "sequence_b")]),
])
def test_call_sequences_make_the_same_calls(exercises, exercise, cell, module, pairs):
    locked, copied = exercises[exercise].cell(cell).source, inspect.getsource(module)
    for in_notebook, in_harness in pairs:
        assert _call_args(copied, in_harness) == _call_args(locked, in_notebook), in_notebook


def test_ex02_targets_and_ex05_input_shape_match(exercises):
    seq = exercises["ex02"].cell("ex02-sequences").source
    for name, (_, target) in ex02.SEQUENCES.items():
        assert f'"{name}": {"NET" if target == "net" else "double"}' in seq
    assert f"X = torch.randn({ex05.SHAPE[0]}, {ex05.SHAPE[1]})" in exercises["ex05"].cell("ex05-workload").source
