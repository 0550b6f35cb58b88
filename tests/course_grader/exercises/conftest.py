"""Fixtures for the exercises' test cells, graded v3-style, with a fake ``measure`` that runs the child in-process.

``grade_with(exercise_id, cells)`` runs the exercise's test cells (``course_grader.verdict.testcells.grade``)
on a ``GradeContext`` whose ``measure`` calls ``course_grader.harness.child.<entry>`` in this process,
with the payload and
the reply sent through JSON and ``protocol.check_json`` as the sandbox would. Its
successful replies are kept in one ``pipeline.replies.ReplyCache`` per test process, as a
grading run keeps them: a payload without student code (a reference measurement, ex02's
key) is measured once, and every test is judged against the same reply.
``model_cells(exercise_id)`` is the model answer's solution cells (markers removed).
"""

from __future__ import annotations

import importlib
import json

import pytest

from course_grader.pipeline.replies import Measurer, ReplyCache
from course_grader.verdict import testcells
from course_grader.verdict.context import GradeContext
from course_grader.wire.protocol import check_json

_REPLIES = ReplyCache()


class _InProcessHost:
    """``GradingHost.measure`` without the sandbox: the harness entry runs here, on a JSON copy."""

    @staticmethod
    def measure(harness: str, entry: str, payload: dict) -> dict:
        module = importlib.import_module(f"course_grader.harness.{harness}")
        reply = getattr(module, entry)(json.loads(json.dumps(payload)))
        check_json(reply)
        return json.loads(json.dumps(reply))


def fake_measure(harness: str, cache: ReplyCache | None = None):
    """``ctx.measure`` as grading builds it (``pipeline.replies.Measurer``), on the in-process host."""
    return Measurer(_InProcessHost(), harness, cache)


def _without_markers(source: str) -> str:
    return "\n".join(line for line in source.split("\n")
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


@pytest.fixture(name="fake_measure")
def fake_measure_fixture():
    """``fake_measure(harness) -> measure``: for a test that wraps the in-process harness."""
    return fake_measure


@pytest.fixture
def model_cells(exercises):
    def cells(exercise_id: str) -> dict[str, str]:
        return {c.course_id: _without_markers(c.source) for c in exercises[exercise_id].solutions}
    return cells


@pytest.fixture
def grade_with(exercises):
    def grade(exercise_id: str, cells: dict[str, str]) -> dict[str, object]:
        ctx = GradeContext(exercises[exercise_id], cells, fake_measure(testcells.HARNESS, _REPLIES))
        verdicts = testcells.grade(ctx)
        assert sorted(v.test_id for v in verdicts) == sorted(c.course_id for c in exercises[exercise_id].tests)
        return {v.test_id: v for v in verdicts}
    return grade


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """The in-process child runs on one thread, as every sandboxed child does (``Limits.torch_threads``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
