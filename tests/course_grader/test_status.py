"""``course_grader.status``: the stored states, and the one sentence a fault is told in."""

from __future__ import annotations

import pytest

from course_grader.status import FAULT_DETAIL_CHARS, FaultKind


@pytest.mark.parametrize("kind", [k for k in FaultKind if k.student_fault])
def test_a_students_fault_is_said_as_what_their_code_did(kind):
    said = kind.sentence("10 s of CPU in cell ex01-a", during="the grader measured student", confirmed=True)
    assert said == (f"your code {kind.wording} while the grader measured student: 10 s of CPU in cell ex01-a"
                    " (confirmed by a second run, alone)")
    assert kind.sentence() == f"your code {kind.wording}"
    assert kind.sentence("x", who="cell 3") == f"cell 3 {kind.wording}: x"


def test_a_grader_fault_is_never_said_as_the_students():
    said = FaultKind.GRADER.sentence("no reply", during="measuring replay", who="your code", confirmed=True)
    assert said == "the grader failed while measuring replay (no reply); this is not your fault"
    assert "your code" not in said


def test_the_detail_is_cut_to_its_cap():
    said = FaultKind.OUTPUT.sentence("A" * (FAULT_DETAIL_CHARS + 50))
    assert said.count("A") == FAULT_DETAIL_CHARS
