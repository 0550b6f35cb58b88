"""What is shipped to a measuring child besides the question (``course_grader.verdict.shipping``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from course_grader.verdict import shipping  # not its names: pytest would collect test_api_names as a test

SETUP = [
    "import torch\nimport torch.nn.functional as F\nimport logging\nfrom math import pi\n",
    "from compile_course.testing import Namespace, code\n"
    "student = reference = Namespace(globals())\n"
    "probe = code('x')\n"
    "TOLERANCE = 1e-6\n"
    "def helper(x):\n    return x\n"
    "class Case:\n    pass\n",
    "this cell does not parse (\n",
]


def test_setup_names_are_every_top_level_binding_of_the_cells_that_parse():
    assert shipping.setup_names(SETUP) == {"torch", "F", "logging", "pi", "Namespace", "code", "student", "reference",
                                  "probe", "TOLERANCE", "helper", "Case"}


def test_the_test_api_is_what_comes_from_the_testing_module_and_everything_built_from_it():
    assert shipping.test_api_names(SETUP) == {"Namespace", "code", "student", "reference", "probe"}
    assert shipping.test_api_names(["ns = globals()\nplain = 3\n"]) == {"ns"}   # a namespace builtin hands one out too


def test_a_measured_function_may_name_the_setup_but_not_the_test_api_or_other_modules():
    allowed = shipping.allowlist_for(SimpleNamespace(setup_sources=SETUP), ("hasattr", "torch._dynamo.reset"))
    assert {"torch", "nn", "TOLERANCE", "helper", "Case", "pi"} <= allowed.provided
    assert not allowed.provided & {"student", "reference", "code", "probe", "Namespace", "logging"}
    assert allowed.imports == {"time", "copy"}
    assert "hasattr" in allowed.builtins and allowed.dotted == {"torch._dynamo.reset"}


TEST_CELL = '''
def unused():
    return 0

def scale(x):
    """the test's own words"""
    return 2 * x

def make_input():
    return scale(torch.ones(3))
'''


def test_the_test_cells_definitions_travel_under_neutral_names_and_only_as_needed():
    shipped = shipping.Shipped(TEST_CELL)
    expression, defs = shipped.expression("make_input()")
    assert expression == "_given_0()"
    assert defs == ["def _given_1(x):\n    return 2 * x", "def _given_0():\n    return _given_1(torch.ones(3))"]
    assert not any("unused" in d or "scale" in d or "own words" in d for d in defs)


def test_a_code_argument_that_is_not_an_expression_is_refused():
    with pytest.raises(ValueError, match="not an expression"):
        shipping.Shipped(TEST_CELL).expression("x = 1")
