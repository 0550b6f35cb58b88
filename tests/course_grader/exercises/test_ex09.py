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
    from course_grader.errors import AllowListError
    from course_grader.harness.allowlist.extract import extract_function
    from course_grader.harness.allowlist.rules import for_cell

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


def test_two_nonstrict_lambdas_are_told_apart_by_their_bindings(grade_with):
    # torch names both "<lambda>_callable" (then "_0", as for one function called twice); the serving child
    # says which top-level name holds each (before: refused, "2 nonstrict_trace functions are named '<lambda>'")
    source = ("SALT = torch._dynamo.nonstrict_trace(lambda h, name: h * channel_salt(name))\n"
              "TIMES = torch._dynamo.nonstrict_trace(lambda h, gain: h * gain)\n\n\n"
              "def scaled_block_fixed(x, w, name):\n    return TIMES(SALT(torch.tanh(x @ w), name), GAIN)\n")
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


def test_an_unbound_function_beside_two_of_its_name_is_refused_with_what_would_help(grade_with):
    # the graph's lambda is held in a tuple, so no top-level name holds it; the re-run's search by name then
    # finds two other lambdas (read in a branch this graph did not take) and says so rather than guess
    source = ("SALT = torch._dynamo.nonstrict_trace(lambda h, name: h * channel_salt(name))\n"
              "TIMES = torch._dynamo.nonstrict_trace(lambda h, gain: h * gain)\n"
              f"PAIR = (torch._dynamo.nonstrict_trace(lambda h, name, gain: {SALTED_BODY}),)\n\n\n"
              "def scaled_block_fixed(x, w, name):\n    h = torch.tanh(x @ w)\n"
              "    if x.dtype == torch.float16:\n        return TIMES(SALT(h, name), GAIN)\n"
              "    return PAIR[0](h, name, GAIN)\n")
    verdicts = grade_with("ex09", {"ex09-answer": source})
    assert passed(verdicts) == set(TESTS) - {"ex09-test-graph"}, {k: v.message for k, v in verdicts.items()}
    message = verdicts["ex09-test-graph"].message
    assert "2 nonstrict_trace functions are named '<lambda>': bind each to a top-level name of its own" in message


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


# adv2 report, section 4 (ex09-factory): two nonstrict_trace functions made by one factory share the __name__
# 'salted'; the graph calls one of them. The serving child names the answer's binding that holds the function
# the graph reads (by identity), so the re-run runs that one: the name no longer matters.
FACTORY = ("def _make_salted():\n    def salted(h, name, gain):\n        return " + SALTED_BODY + "\n\n"
           "    return torch._dynamo.nonstrict_trace(salted)\n\n\n"
           "SALTED_SINGLE = _make_salted()\nSALTED_DOUBLE = _make_salted()\n\n\n"
           "def scaled_block_fixed(x, w, name):\n    h = torch.tanh(x @ w)\n"
           "    return (SALTED_DOUBLE if x.dtype == torch.float64 else SALTED_SINGLE)(h, name, GAIN)\n")


def test_two_nonstrict_functions_of_one_name_are_told_apart_by_their_binding(grade_with):
    # before: "2 nonstrict_trace functions are named 'salted', which the graph cannot tell apart" (6/8)
    verdicts = grade_with("ex09", {"ex09-answer": FACTORY})
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


def test_the_factory_answer_is_judged_as_the_same_def(grade_with):
    as_def = grade_with("ex09", answer("correct-nonstrict-trace"))
    assert passed(grade_with("ex09", {"ex09-answer": FACTORY})) == passed(as_def) == set(TESTS)


# the binding is the serving child's word: what a child that lies about it can get
FACTORY_TWO_KINDS = ("def _make_salted(k):\n    def salted(h, name, gain):\n        return " + SALTED_BODY +
                     " * k\n\n    return torch._dynamo.nonstrict_trace(salted)\n\n\n"
                     "RIGHT = _make_salted(1.0)\nWRONG = _make_salted(2.0)\n\n\n"
                     "def scaled_block_fixed(x, w, name):\n    h = torch.tanh(x @ w)\n"
                     "    return (WRONG if x.dtype == torch.float16 else RIGHT)(h, name, GAIN)\n")


def grade_forged(exercises, source: str, forge) -> dict:
    """ex09 graded with every serve reply passed through ``forge(reply)`` (a child whose allow-list fell);
    the replay children are the real ones, in this process."""
    from course_grader.harness import child
    from course_grader.verdict import testcells
    from course_grader.verdict.context import GradeContext

    def measure(entry, payload):
        reply = getattr(child, entry)(json.loads(json.dumps(payload)))
        if entry == "serve":
            forge(reply)
        return json.loads(json.dumps(reply))
    return {v.test_id: v for v in testcells.grade(GradeContext(exercises["ex09"], {"ex09-answer": source}, measure))}


def rebind(binding=None, *, times: float = 1.0):
    """A forge: every nonstrict_trace function node's ``binding`` set to ``binding`` (None: removed), and every
    reported value multiplied by ``times``."""
    from compile_course import measurement

    def forge(reply):
        for run in reply.get("runs") or []:
            for graph in run["graphs"]:
                for node in graph["nodes"]:
                    if "binding" in node:
                        node.pop("binding")
                        if binding is not None:
                            node["binding"] = binding
            for call in run["calls"]:
                if times != 1.0 and call["value"] is not None:
                    call["value"] = measurement.to_data(measurement.from_data(call["value"]) * times)
    return forge


def test_the_serving_child_names_the_binding_that_holds_the_graphs_function(exercises):
    seen = []

    def record(reply):
        seen.extend(n.get("binding") for run in reply.get("runs") or [] for g in run["graphs"] for n in g["nodes"]
                    if n["op"] == "get_attr" and n["target"].endswith("_callable"))
    verdicts = grade_forged(exercises, FACTORY_TWO_KINDS, record)
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}
    assert seen and set(seen) == {"RIGHT"}, seen   # float32 and float64 calls both take RIGHT; WRONG never runs


def test_a_binding_to_another_function_of_the_name_gains_nothing(exercises):
    # the re-run runs WRONG (twice RIGHT's values): not the output reported
    verdicts = grade_forged(exercises, FACTORY_TWO_KINDS, rebind("WRONG"))
    assert passed(verdicts) == set(TESTS) - {"ex09-test-graph"}, {k: v.message for k, v in verdicts.items()}
    assert "does not give the output that was reported" in verdicts["ex09-test-graph"].message
    # reporting WRONG's output as well: the re-run then matches it, the reference does not (on new inputs too)
    verdicts = grade_forged(exercises, FACTORY_TWO_KINDS, rebind("WRONG", times=2.0))
    assert "ex09-test-graph" not in passed(verdicts), verdicts["ex09-test-graph"].message
    # the same name for an equal function (the factory answer's other binding): the same graph, nothing gained
    verdicts = grade_forged(exercises, FACTORY, rebind("SALTED_DOUBLE"))
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize(("binding", "why"), [
    ("scaled_block_fixed", "is no nonstrict_trace function named 'salted')"),   # a def of the answer's, not one
    ("channel_salt", "is no nonstrict_trace function named 'salted')"),         # a setup function
    ("NOWHERE", "is no nonstrict_trace function named 'salted')"),
    ("torch.tanh", "cannot be checked (it names the answer's nonstrict_trace function by something other"),
    ("__builtins__", "cannot be checked (it names the answer's nonstrict_trace function by something other"),
    ("x" * 200, "cannot be checked (it names the answer's nonstrict_trace function by something other"),
    (7, "cannot be checked (it names the answer's nonstrict_trace function by something other"),
])
def test_a_binding_that_names_no_nonstrict_function_of_the_name_is_refused(exercises, binding, why):
    verdicts = grade_forged(exercises, FACTORY_TWO_KINDS, rebind(binding))
    assert passed(verdicts) == set(TESTS) - {"ex09-test-graph"}, {k: v.message for k, v in verdicts.items()}
    assert why in verdicts["ex09-test-graph"].message, verdicts["ex09-test-graph"].message


def test_without_a_binding_the_re_run_searches_by_name_as_before(exercises):
    # a child that names nothing (the function in a tuple, say): two functions named 'salted', refused
    verdicts = grade_forged(exercises, FACTORY_TWO_KINDS, rebind(None))
    assert "2 nonstrict_trace functions are named 'salted': bind each" in verdicts["ex09-test-graph"].message
    # one function of the name: found by it
    verdicts = grade_forged(exercises, answer("correct-nonstrict-trace")["ex09-answer"], rebind(None))
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


def test_a_binding_is_accepted_only_on_a_nonstrict_functions_node():
    from course_grader.verdict import graphcheck

    spec = '[1, {"type": "builtins.tuple", "context": "null", "children_spec": []}]'
    nodes = [
        {"op": "placeholder", "name": "l_x_", "target": "L_x_", "args": {"tuple": []}, "kwargs": {"kwargs": {}},
         "source": "L['x']"},
        {"op": "get_attr", "name": "f_callable", "target": "f_callable", "args": {"tuple": []},
         "kwargs": {"kwargs": {}}, "binding": "F"},
        {"op": "get_attr", "name": "f_input_spec", "target": "f_input_spec", "args": {"tuple": []},
         "kwargs": {"kwargs": {}}, "spec": spec},
        {"op": "call_function", "name": "flat", "target": "torch._dynamo.variables.torch.flat_apply_capture",
         "args": {"tuple": [{"node": "f_callable"}, {"node": "f_input_spec"}, {"node": "l_x_"}]},
         "kwargs": {"kwargs": {}}},
        {"op": "output", "name": "output", "target": "output", "args": {"tuple": [{"tuple": [{"node": "flat"}]}]},
         "kwargs": {"kwargs": {}}}]
    kinds = frozenset({"nonstrict_trace"})
    assert graphcheck.validate({"nodes": nodes}, kinds) is None
    for i in (0, 2, 3, 4):   # on any other node, a binding is refused
        nodes[i]["binding"] = "F"
        assert graphcheck.validate({"nodes": nodes}, kinds) == "a node is malformed", i
        del nodes[i]["binding"]
    assert graphcheck.validate({"nodes": nodes}, kinds) is None


# issue 34: a fake implementation that lies only to a trace. The old check ran opcheck after the graph test's trace,
# in the same process, so it saw only the later, truthful calls (8/8; fair 6/8). Now opcheck runs first, in a child
# of its own (alone=True), and every fake output a trace used is compared with the op's real output.
HONEST_FAKE = "def _fake(h, name, gain):\n    return torch.empty_like(h)"
LYING_FAKES = {
    # the reviewer's: the first call (the graph test's trace, before) claims another dtype, later calls the truth
    "first call": ("SEEN = []\n\n\ndef _fake(h, name, gain):\n    SEEN.append(1)\n    if len(SEEN) == 1:\n"
                   "        return torch.empty_like(h, dtype=torch.float64)\n    return torch.empty_like(h)",
                   "test_faketensor failed"),
    # while torch compiles (never under opcheck), transposed strides
    "while compiling": ("def _fake(h, name, gain):\n    if torch.compiler.is_compiling():\n"
                        "        return torch.empty(h.shape[1], h.shape[0], dtype=h.dtype).t()\n"
                        "    return torch.empty_like(h)",
                        "its fake output in Dynamo's trace is not its real output: MetadataMismatchError: Stride"),
}


@pytest.mark.parametrize("lie", sorted(LYING_FAKES))
def test_a_fake_that_lies_only_to_a_trace_fails_the_graph_test(grade_with, lie):
    fake, why = LYING_FAKES[lie]
    source = answer("honest-custom-op")["ex09-answer"]
    assert HONEST_FAKE in source
    verdicts = grade_with("ex09", {"ex09-answer": source.replace(HONEST_FAKE, fake)})
    assert passed(verdicts) == set(TESTS) - {"ex09-test-graph"}, {k: v.message for k, v in verdicts.items()}
    assert why in verdicts["ex09-test-graph"].message, verdicts["ex09-test-graph"].message


def test_the_public_and_the_older_name_of_nonstrict_trace_are_both_graded_in_full(grade_with):
    public = answer("correct-nonstrict-trace")["ex09-answer"]
    assert "torch.compiler.nonstrict_trace" in public
    older = public.replace("torch.compiler.nonstrict_trace", "torch._dynamo.nonstrict_trace")
    for source in (public, older):
        verdicts = grade_with("ex09", {"ex09-answer": source})
        assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}
