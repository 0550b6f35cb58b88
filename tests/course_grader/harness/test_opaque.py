"""harness.opaque: which of the answer's functions a ``nonstrict_trace`` node of a captured graph reads.

Two functions of one ``__name__`` (made by one factory) give graph attributes of one name; the measuring
child names the answer's binding that holds the graph's function (``binding_finder``), and the re-run
(``AnswerCode``) takes that binding only if it holds a ``nonstrict_trace`` function of that name.
"""

from __future__ import annotations

import pytest
import torch

from course_grader.harness.allowlist.extract import load_checked
from course_grader.harness.allowlist.rules import for_cell
from course_grader.harness.opaque import AnswerCode, binding_finder, leaf_function

FACTORY = '''
def _make(k):
    def salted(h, gain):
        return h * gain * k

    return torch._dynamo.nonstrict_trace(salted)


ONE = _make(1.0)
TWO = _make(2.0)
BOTH = (ONE, TWO)


def answer(x):
    return (TWO if x.dtype == torch.float16 else ONE)(torch.tanh(x), 1.5)
'''


def load(source: str = FACTORY):
    allowed = for_cell(["torch"], [], ["torch._dynamo.nonstrict_trace"])
    return load_checked(source, "answer", allowed, {"torch": torch})


def captured_attributes(fn) -> dict:
    """The graph module's get_attr values for one compile of ``fn`` (fullgraph)."""
    found = {}

    def backend(gm, example_inputs):
        found.update({n.target: getattr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr"})
        return gm.forward

    torch.compile(fn, backend=backend, fullgraph=True)(torch.randn(2, 3))
    return found


def test_the_graphs_function_is_found_by_identity_under_its_binding():
    fn = load()
    scope = fn.__globals__
    attrs = captured_attributes(fn)
    assert leaf_function(attrs["salted_callable"]) is scope["ONE"]
    binding_of = binding_finder(fn)
    assert binding_of(attrs["salted_callable"]) == "ONE"         # ONE, not TWO nor BOTH's item
    assert binding_of(attrs["salted_input_spec"]) is None       # no function: nothing named
    assert binding_finder(lambda x: x) is None                  # not the answer's namespace: nothing named


def test_a_function_no_top_level_name_holds_is_not_named():
    fn = load(FACTORY.replace("(TWO if x.dtype == torch.float16 else ONE)", "BOTH[1]"))
    attrs = captured_attributes(fn)
    assert leaf_function(attrs["salted_callable"]) is fn.__globals__["TWO"]
    assert binding_finder(fn)(attrs["salted_callable"]) == "TWO"    # read through BOTH, held by TWO too
    source = FACTORY.replace("ONE = _make(1.0)\nTWO = _make(2.0)\nBOTH = (ONE, TWO)", "BOTH = (_make(1.0), _make(2.0))")
    fn = load(source.replace("(TWO if x.dtype == torch.float16 else ONE)", "BOTH[1]"))
    assert binding_finder(fn)(captured_attributes(fn)["salted_callable"]) is None


def test_the_re_run_takes_a_binding_only_to_a_nonstrict_function_of_the_nodes_name():
    scope = load().__globals__
    code = AnswerCode(scope)
    assert code.get_attr("salted_callable", "TWO") is scope["TWO"]
    assert code.get_attr("salted_callable_0", "ONE") is scope["ONE"]
    for binding in ("answer", "_make", "BOTH", "torch", "NOWHERE", "__builtins__", "a.b", "x" * 200, 7):
        with pytest.raises(ValueError, match="is no nonstrict_trace function named 'salted'"):
            code.get_attr("salted_callable", binding)
    with pytest.raises(ValueError, match="is no nonstrict_trace function named 'other'"):
        code.get_attr("other_callable", "ONE")                    # a binding of another __name__
    # no binding: searched by name as before, and refused with what would help when two share it
    with pytest.raises(ValueError, match="2 nonstrict_trace functions are named 'salted': bind each to a top-level"):
        code.get_attr("salted_callable")
