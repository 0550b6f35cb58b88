"""GradeContext: literals are parsed, never run; code answers are cut out and allow-listed."""

from __future__ import annotations

import pytest

from course_grader.harness.allowlist.rules import AllowList
from course_grader.verdict.context import AnswerError, GradeContext, TestVerdict


def ctx(cells: dict[str, str]) -> GradeContext:
    def measure(entry, payload):
        raise AssertionError("nothing here may measure")
    return GradeContext(None, cells, measure)


def test_a_long_comment_costs_an_honest_answer_nothing():
    # v2 refused a cell over 20,000 characters, comments included, and the answer lost its points
    comment = "".join(f"# line {i}: why I think this call breaks, in my own words\n" for i in range(1000))
    c = ctx({"a": comment + "ANSWER = {'x': None}\n" + comment})
    assert len(c.cells["a"]) > 100_000
    assert c.literal("a", "ANSWER") == {"x": None}


def test_literal_is_parsed_with_comments_and_layout():
    c = ctx({"a": "# my answer\nANSWER = {\n  'x': None,  # no break\n  'y': [1, 0],\n}\nprint(ANSWER)\n"})
    assert c.literal("a", "ANSWER") == {"x": None, "y": [1, 0]}


@pytest.mark.parametrize("source, phrase", [
    ("ANSWER = compute()", "literal value"),
    ("ANSWER = [i for i in range(3)]", "literal value"),
    ("ANSWER = __import__('os').system('true')", "literal value"),
    ("OTHER = 1", "no `ANSWER = ...`"),
    ('raise NotImplementedError("a: replace this line with your answer")', "no `ANSWER = ...`"),
    ("ANSWER = " + "[" * 50 + "]" * 50, "far larger or deeper"),
    ("ANSWER = [" + "0, " * 5000 + "]", "far larger or deeper"),
    ("ANSWER = '" + "x" * 300000 + "'", "far larger or deeper"),
    ("ANSWER = (", "syntax error"),
    ("ANSWER = " + "[" * 1000 + "]" * 1000, "syntax error"),
])
def test_unusable_literals_raise_answer_error(source, phrase):
    with pytest.raises(AnswerError, match=None) as info:
        ctx({"a": source}).literal("a", "ANSWER")
    assert phrase in str(info.value)


def test_the_last_assignment_is_the_answer_as_in_python():
    c = ctx({"a": "ANSWER = {'x': 'print'}\n# on second thought:\nANSWER = {'x': None}\n"})
    assert c.literal("a", "ANSWER") == {"x": None}


def test_an_annotated_assignment_is_an_answer_too():
    assert ctx({"a": "ANSWER: dict[str, str | None] = {'x': None}"}).literal("a", "ANSWER") == {"x": None}


def test_missing_cell_is_an_answer_error():
    with pytest.raises(AnswerError, match="missing"):
        ctx({}).literal("a", "ANSWER")


def test_function_source_turns_allowlist_errors_into_answer_errors():
    c = ctx({"a": "def f(x):\n    return getattr(x, 'y')\n"})
    with pytest.raises(AnswerError, match="getattr"):
        c.function_source("a", "f", AllowList())
    assert "def f" in ctx({"a": "def f(x):\n    return x\n"}).function_source("a", "f", AllowList())


def test_verdict_is_plain_data():
    v = TestVerdict("t", True, "ok")
    assert (v.test_id, v.passed, v.message) == ("t", True, "ok")
