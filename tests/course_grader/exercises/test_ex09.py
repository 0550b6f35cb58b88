"""ex09 graded from its notebook's test cells: one graph around a call Dynamo cannot trace.

The graph a custom op or a ``nonstrict_trace`` answer compiles to calls the answer's own code; the grader
re-runs it in a child that loads the answer (``harness.opaque``). These tests grade the samples' answers
in-process and check that each test can fail for the reason it names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAMPLES = json.loads((Path(__file__).resolve().parents[3] / "solutions" / "ex09_opaque_call.samples.json")
                     .read_text(encoding="utf-8"))
TESTS = ("ex09-test-values", "ex09-test-graph", "ex09-hidden-values", "ex09-hidden-gain")


def answer(sample: str) -> dict[str, str]:
    return {"ex09-answer": SAMPLES[sample]["replace"]["ex09-answer"]}


def passed(verdicts) -> set[str]:
    return {k for k, v in verdicts.items() if v.passed and k in TESTS}


def test_model_answer_passes_every_test(grade_with, model_cells):
    verdicts = grade_with("ex09", model_cells("ex09"))
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


def test_a_custom_op_answer_is_graded_in_full(grade_with):
    # torch.library.custom_op is allowed by the cell; its graph is re-run with the answer's op loaded
    verdicts = grade_with("ex09", answer("honest-custom-op"))
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize("sample", ["partial-allow-in-graph-stale", "partial-nonstrict-reads-global",
                                    "partial-frozen-gain"])
def test_a_stale_global_shortcut_fails_only_the_gain_test(grade_with, sample):
    verdicts = grade_with("ex09", answer(sample))
    assert passed(verdicts) == set(TESTS) - {"ex09-hidden-gain"}, {k: v.message for k, v in verdicts.items()}
    assert "GAIN = 2.5" in verdicts["ex09-hidden-gain"].message


def test_calling_the_original_fails_the_graph_test_with_torchs_reason(grade_with):
    verdicts = grade_with("ex09", answer("hostile-calls-original"))
    assert passed(verdicts) == {"ex09-test-values", "ex09-hidden-values"}
    assert "raised" in verdicts["ex09-test-graph"].message


def test_an_op_that_fails_opcheck_fails_the_graph_test(grade_with):
    # the fake kernel claims another dtype than the real one returns: opcheck's fake-tensor check sees it
    source = answer("honest-custom-op")["ex09-answer"].replace(
        "return torch.empty_like(h)", "return torch.empty_like(h, dtype=torch.float64)")
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert not verdicts["ex09-test-graph"].passed


def test_a_graph_calling_the_answer_is_refused_when_the_cell_does_not_allow_it():
    from course_grader.verdict import graphcheck

    graph = {"nodes": [
        {"op": "placeholder", "name": "l_x_", "target": "L_x_", "args": {"tuple": []}, "kwargs": {"kwargs": {}},
         "source": "L['x']"},
        {"op": "call_function", "name": "op", "target": "torch.ops.ex09.salted_scale.default",
         "args": {"tuple": [{"node": "l_x_"}, "ffn", 1.5]}, "kwargs": {"kwargs": {}}},
        {"op": "output", "name": "output", "target": "output", "args": {"tuple": [{"tuple": [{"node": "op"}]}]},
         "kwargs": {"kwargs": {}}}]}
    assert "allow list" in graphcheck.validate(graph)
    assert graphcheck.validate(graph, frozenset({"custom_op"})) is None
    assert graphcheck.calls_answer(graph)
    graph["nodes"][1]["target"] = "torch.ops.aten.mul.Tensor"   # torch's own op: a plain replay
    assert graphcheck.validate(graph, frozenset({"custom_op"})) is None
    assert not graphcheck.calls_answer(graph)


def test_a_nonstrict_call_must_pass_the_function_and_its_own_layout():
    from course_grader.verdict import graphcheck

    spec = '[1, {"type": "builtins.tuple", "context": "null", "children_spec": []}]'
    nodes = [
        {"op": "placeholder", "name": "l_x_", "target": "L_x_", "args": {"tuple": []}, "kwargs": {"kwargs": {}},
         "source": "L['x']"},
        {"op": "get_attr", "name": "f_callable", "target": "f_callable", "args": {"tuple": []},
         "kwargs": {"kwargs": {}}},
        {"op": "get_attr", "name": "g_input_spec", "target": "g_input_spec", "args": {"tuple": []},
         "kwargs": {"kwargs": {}}, "spec": spec},
        {"op": "call_function", "name": "flat", "target": "torch._dynamo.variables.torch.flat_apply_capture",
         "args": {"tuple": [{"node": "f_callable"}, {"node": "g_input_spec"}, {"node": "l_x_"}]},
         "kwargs": {"kwargs": {}}},
        {"op": "output", "name": "output", "target": "output", "args": {"tuple": [{"tuple": [{"node": "flat"}]}]},
         "kwargs": {"kwargs": {}}}]
    kinds = frozenset({"nonstrict_trace"})
    assert "unexpected form" in graphcheck.validate({"nodes": nodes}, kinds)   # f's function, g's layout
    nodes[2].update(name="f_input_spec", target="f_input_spec")
    nodes[3]["args"]["tuple"][1] = {"node": "f_input_spec"}
    assert graphcheck.validate({"nodes": nodes}, kinds) is None
    nodes[2]["spec"] = spec.replace("builtins.tuple", "collections.OrderedDict")
    assert "containers" in graphcheck.validate({"nodes": nodes}, kinds)


def test_the_allow_list_opens_a_denied_part_only_along_the_listed_path():
    from course_grader.harness.allowlist.extract import extract_function
    from course_grader.harness.allowlist.rules import AllowListError, for_cell

    allowed = for_cell({"torch"}, set(), ["torch.library.custom_op"])
    extract_function("def f():\n    return torch.library.custom_op\n", "f", allowed)
    for refused in ("torch.library.Library", "torch.library.opcheck", "torch.library.custom_op.__call__"):
        with pytest.raises(AllowListError):
            extract_function(f"def f():\n    return {refused}\n", "f", allowed)
    with pytest.raises(AllowListError, match="loads code"):
        extract_function("def f():\n    return torch.library.custom_op\n", "f", for_cell({"torch"}, set(), []))


def test_an_op_called_only_while_compiling_is_opchecked_too(grade_with):
    # the adversary's mal05: eagerly no custom op runs, so an eager-only search found none to opcheck; the
    # compiled graph calls an op with no autograd registration (opcheck's autograd check refuses it)
    source = "\n".join([
        "def salt_kernel(like, name):",
        "    return torch.full((), float(channel_salt(name)), dtype=like.dtype)",
        "",
        "",
        "def salt_fake(like, name):",
        "    return torch.empty((), dtype=like.dtype)",
        "",
        "",
        "def make_op():",
        "    op = torch.library.custom_op('adv::salt_sneaky', salt_kernel, mutates_args=(),",
        "                                 schema='(Tensor like, str name) -> Tensor')",
        "    op.register_fake(salt_fake)",
        "    return op",
        "",
        "",
        "SALT = make_op()",
        "",
        "",
        "def scaled_block_fixed(x, w, name):",
        "    h = torch.tanh(x @ w)",
        "    if torch.compiler.is_compiling():",
        "        return h * (SALT(h.detach(), name) * GAIN)",
        "    return h * (channel_salt(name) * GAIN)",
        ""])
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert passed(verdicts) == set(TESTS) - {"ex09-test-graph"}, {k: v.message for k, v in verdicts.items()}
    assert "adv.salt_sneaky" in verdicts["ex09-test-graph"].message


# nonstrict_trace's function as torch names it in the graph: FN_callable, FN the __name__ of what nonstrict_trace
# returned, so "<lambda>_callable" for a lambda and "inner_callable" for a nested def (torch 2.14.1, issue 26)
SALTED_BODY = "h * (channel_salt(name) * gain)"
SALTED_CALL = "\n\n\ndef scaled_block_fixed(x, w, name):\n    return SALTED(torch.tanh(x @ w), name, GAIN)\n"
SAME_AS_A_DEF = {
    "a lambda": f"SALTED = torch._dynamo.nonstrict_trace(lambda h, name, gain: {SALTED_BODY})" + SALTED_CALL,
    "a nested def": ("def make():\n    def inner(h, name, gain):\n        return " + SALTED_BODY + "\n\n"
                     "    return torch._dynamo.nonstrict_trace(inner)\n\n\nSALTED = make()" + SALTED_CALL),
    # a lambda that wraps all of scaled_block: judged as the same def is (one graph, GAIN read once)
    "a lambda around scaled_block": ("SALTED = torch._dynamo.nonstrict_trace(lambda x, w, name: "
                                     "scaled_block(x, w, name))\n\n\n"
                                     "def scaled_block_fixed(x, w, name):\n    return SALTED(x, w, name)\n"),
}
AS_A_DEF = {
    "a lambda": answer("correct-nonstrict-trace")["ex09-answer"],
    "a nested def": answer("correct-nonstrict-trace")["ex09-answer"],
    "a lambda around scaled_block": ("def _whole(x, w, name):\n    return scaled_block(x, w, name)\n\n\n"
                                     "SALTED = torch._dynamo.nonstrict_trace(_whole)\n\n\n"
                                     "def scaled_block_fixed(x, w, name):\n    return SALTED(x, w, name)\n"),
}


@pytest.mark.parametrize("form", sorted(SAME_AS_A_DEF))
def test_a_nonstrict_function_is_judged_by_its_graph_not_by_how_it_is_written(grade_with, form):
    # before: "<lambda>_callable" fell through to "cannot be checked (it uses torch.cond or another higher-order
    # operator ...)", and a nested def's re-run failed ("'inner', which is no function of the answer's cell")
    other = grade_with("ex09", {"ex09-answer": SAME_AS_A_DEF[form]})
    as_def = grade_with("ex09", {"ex09-answer": AS_A_DEF[form]})
    assert passed(other) == passed(as_def), {k: v.message for k, v in other.items()}
    assert "ex09-test-graph" in passed(other), other["ex09-test-graph"].message


def test_a_stale_default_gain_in_a_nonstrict_lambda_fails_only_the_gain_test(grade_with):
    # the hostile corpus's adv-stale-default-gain: GAIN read once, as a default argument
    source = (f"_SALTED = torch._dynamo.nonstrict_trace(lambda h, name, gain: {SALTED_BODY})\n\n\n"
              "def scaled_block_fixed(x, w, name, gain=GAIN):\n    return _SALTED(torch.tanh(x @ w), name, gain)\n")
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert passed(verdicts) == set(TESTS) - {"ex09-hidden-gain"}, {k: v.message for k, v in verdicts.items()}
    assert "GAIN = 2.5" in verdicts["ex09-hidden-gain"].message


def test_a_nonstrict_lambda_does_not_hide_a_graph_break(grade_with):
    source = (f"SALTED = torch._dynamo.nonstrict_trace(lambda h, name, gain: {SALTED_BODY})\n\n\n"
              "def scaled_block_fixed(x, w, name):\n    salt = channel_salt(name)\n"
              "    return SALTED(torch.tanh(x @ w), name, GAIN) * (salt / salt)\n")
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert passed(verdicts) == {"ex09-test-values", "ex09-hidden-values"}, {k: v.message for k, v in verdicts.items()}
    assert "raised" in verdicts["ex09-test-graph"].message


def test_two_nonstrict_lambdas_are_refused_with_the_reason(grade_with):
    # torch names both "<lambda>_callable" (then "_0", as for one function called twice): the re-run cannot
    # tell which is which, and says so rather than guess
    source = ("SALT = torch._dynamo.nonstrict_trace(lambda h, name: h * channel_salt(name))\n"
              "TIMES = torch._dynamo.nonstrict_trace(lambda h, gain: h * gain)\n\n\n"
              "def scaled_block_fixed(x, w, name):\n    return TIMES(SALT(torch.tanh(x @ w), name), GAIN)\n")
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert "ex09-test-graph" not in passed(verdicts)
    assert "cannot tell apart" in verdicts["ex09-test-graph"].message


def test_a_graph_attribute_is_called_a_higher_order_operator_only_beside_one():
    from course_grader.verdict import graphcheck

    spec = '[1, {"type": "builtins.tuple", "context": "null", "children_spec": []}]'
    nodes = [
        {"op": "placeholder", "name": "l_x_", "target": "L_x_", "args": {"tuple": []}, "kwargs": {"kwargs": {}},
         "source": "L['x']"},
        {"op": "get_attr", "name": "_lambda__callable", "target": "<lambda>_callable", "args": {"tuple": []},
         "kwargs": {"kwargs": {}}},
        {"op": "get_attr", "name": "_lambda__input_spec", "target": "<lambda>_input_spec", "args": {"tuple": []},
         "kwargs": {"kwargs": {}}, "spec": spec},
        {"op": "call_function", "name": "flat", "target": "torch._dynamo.variables.torch.flat_apply_capture",
         "args": {"tuple": [{"node": "_lambda__callable"}, {"node": "_lambda__input_spec"}, {"node": "l_x_"}]},
         "kwargs": {"kwargs": {}}},
        {"op": "output", "name": "output", "target": "output", "args": {"tuple": [{"tuple": [{"node": "flat"}]}]},
         "kwargs": {"kwargs": {}}}]
    assert graphcheck.validate({"nodes": nodes}, frozenset({"nonstrict_trace"})) is None
    assert "allow list" in graphcheck.validate({"nodes": nodes})
    nodes[1]["target"] = "something_else"   # no function torch names, and no higher-order operator: said so
    problem = graphcheck.validate({"nodes": nodes}, frozenset({"nonstrict_trace"}))
    assert "'something_else'" in problem and problem != graphcheck.HIGHER_ORDER
    nodes[3]["target"] = "torch.ops.higher_order.cond"   # beside one, a subgraph: HIGHER_ORDER, as before
    assert graphcheck.validate({"nodes": nodes}, frozenset({"nonstrict_trace"})) == graphcheck.HIGHER_ORDER
