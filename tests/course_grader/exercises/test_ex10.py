"""ex10 graded from its notebook's test cells: the recompile limit, a tlparse report, and an unbacked size.

The keys of Parts A to C are torch's at grading (the course's ``serve`` and ``report_records`` run in a
child without student code); Part D's graph holds ``.item()``, which the grader's replay runs
(``verdict.graphcheck``). These tests grade the samples' answers in-process and check that each test
can fail for the reason it names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAMPLES = json.loads((Path(__file__).resolve().parents[3] / "solutions" / "ex10_limits_unbacked.samples.json")
                     .read_text(encoding="utf-8"))
TESTS = ("ex10-test-served", "ex10-hidden-served", "ex10-test-strict", "ex10-hidden-strict", "ex10-test-report",
         "ex10-hidden-report", "ex10-test-trim", "ex10-hidden-trim")


def passed(verdicts) -> set[str]:
    return {k for k, v in verdicts.items() if v.passed and k in TESTS}


def with_sample(model: dict[str, str], sample: str) -> dict[str, str]:
    return {**model, **SAMPLES[sample]["replace"]}


@pytest.fixture(scope="module")
def model(exercises):
    return {c.course_id: "\n".join(line for line in c.source.split("\n")
                                   if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
            for c in exercises["ex10"].solutions}


def test_model_answer_passes_every_test(grade_with, model):
    verdicts = grade_with("ex10", model)
    assert passed(verdicts) == set(TESTS), {k: v.message for k, v in verdicts.items()}


@pytest.mark.parametrize("sample, failing", [
    ("wrong-eager-for-good", {"ex10-hidden-served"}),
    ("wrong-warned-every-fallback", {"ex10-hidden-served"}),
    ("hostile-raises-the-limit", {"ex10-hidden-served"}),
    ("wrong-stance-like-limit", {"ex10-hidden-strict"}),
    ("wrong-report-counts-calls", {"ex10-hidden-report"}),
    ("partial-check-off-by-one", {"ex10-hidden-trim"}),
    ("partial-drops-the-refusal", {"ex10-hidden-trim"}),
])
def test_each_wrong_answer_fails_only_its_hidden_test(grade_with, model, sample, failing):
    verdicts = grade_with("ex10", with_sample(model, sample))
    assert passed(verdicts) == set(TESTS) - failing, {k: v.message for k, v in verdicts.items()}


def test_a_refusal_that_is_dropped_is_named(grade_with, model):
    verdicts = grade_with("ex10", with_sample(model, "partial-drops-the-refusal"))
    assert "must raise" in verdicts["ex10-hidden-trim"].message


def test_a_check_on_the_public_width_fails_where_the_width_differs(grade_with, model):
    # a hard-coded width (the public cases' 6) is right on the public cases, and refuses a valid 7 of 7
    source = SAMPLES["partial-check-off-by-one"]["replace"]["ex10-answer"].replace("k < x.size(1)", "k <= 6")
    verdicts = grade_with("ex10", {**model, "ex10-answer": source})
    assert passed(verdicts) == set(TESTS) - {"ex10-hidden-trim"}, {k: v.message for k, v in verdicts.items()}


def test_the_original_function_fails_the_graph_test_with_torchs_data_dependent_error(grade_with, model):
    source = ("def trim_to_longest_fixed(x, lengths):\n    k = lengths.max().item()\n    if k > x.size(1):\n"
              "        raise ValueError('too long')\n    return x[:, :k]\n")
    verdicts = grade_with("ex10", {**model, "ex10-answer": source})
    assert not verdicts["ex10-test-trim"].passed
    assert "data-dependent" in verdicts["ex10-test-trim"].message


def test_a_graph_that_reads_a_number_with_item_is_replayed():
    """Dynamo's graph of the model answer holds ``.item()`` and its unbacked size; the replay runs it."""
    import torch

    from compile_course.measurement import compile_run
    from course_grader.harness.child import _replay_one
    from course_grader.verdict import graphcheck

    def trim(x, lengths):
        k = lengths.max().item()
        torch._check(k <= x.size(1), lambda: "beyond")
        return x[:, :k]

    x, lengths = torch.arange(12.0).reshape(2, 6), torch.tensor([3, 4])
    (run,) = compile_run(trim, [(x, lengths)], fullgraph=True)
    graph = run.graphs[0]
    assert "item" in [n["target"] for n in graph["nodes"] if n["op"] == "call_method"]
    assert graphcheck.validate(graph) is None
    from compile_course import measurement as measure
    for lengths, columns in ((torch.tensor([1, 5]), 5), (torch.tensor([0, 0]), 0)):
        reply = _replay_one(graph, [measure.to_data(x), measure.to_data(lengths)], ["x", "lengths"], False)
        (out,) = measure.from_data(reply["outputs"])
        assert out.shape == (2, columns) and torch.equal(out, x[:, :columns])
    beyond = _replay_one(graph, [measure.to_data(x), measure.to_data(torch.tensor([7, 1]))], ["x", "lengths"], False)
    assert beyond["error"] and "beyond" in beyond["error"]   # torch._check's assertion, run by the replay
