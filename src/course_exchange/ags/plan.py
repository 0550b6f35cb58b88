"""What ``course grade post-scores`` will do with each score, decided from the gradebook and the LMS.

Each final score of the gradebook, with the student's LMS user id, against the LMS's own result for that
user on the exercise's line item (found by ``resourceId`` and our tag, created when missing), is:

* ``new``: the LMS holds no result for that user there (or the line item is still to be created);
* ``changed``: it holds another score (given / maximum differ);
* ``unchanged``: it holds this very score: nothing is sent, so posting a gradebook twice changes nothing.

A score that is withheld (flagged, review pending, rejected, a grader fault: see ``api.FinalScore``) or
whose student has no known LMS user id is a :class:`Skip`, with the reason. Deciding sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from course_grader.api import FinalScore

SAME_SCORE = 1e-6            # LMSs store scores as decimals: a difference below this is the same score
NO_LMS_ID = "no LTI user id: not launched from the LMS yet, and not in --roster"


class State(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Skip:
    student: str
    exercise: str
    reason: str


@dataclass
class Planned:
    score: FinalScore
    lms_user: str
    state: State
    line_item: dict | None          # None: the exercise's line item is to be created
    lms_had: str = ""               # the LMS's score before, "3/5", for a changed one


def same(result: dict, given: float, maximum: float) -> bool:
    """Whether an AGS result holds ``given`` out of ``maximum`` (as a fraction, should the LMS rescale)."""
    got, of = result.get("resultScore"), result.get("resultMaximum") or 1.0
    if got is None or not maximum:
        return False
    return abs(float(got) / float(of) - given / maximum) < SAME_SCORE


def decide(scores: list[FinalScore], users: dict[str, str], line_items: dict[str, dict],
           results: dict[str, dict[str, dict]]) -> tuple[list[Planned], list[Skip]]:
    """``users``: student -> LMS user id; ``line_items``: exercise -> line item; ``results``: exercise ->
    LMS user id -> result."""
    planned, skipped = [], []
    for s in scores:
        if s.withheld:
            skipped.append(Skip(s.student, s.exercise, s.withheld))
            continue
        user = users.get(s.student)
        if not user:
            skipped.append(Skip(s.student, s.exercise, NO_LMS_ID))
            continue
        item = line_items.get(s.exercise)
        had = results.get(s.exercise, {}).get(user) if item else None
        if had is None or had.get("resultScore") is None:
            planned.append(Planned(s, user, State.NEW, item))
        elif same(had, s.given, s.maximum):
            planned.append(Planned(s, user, State.UNCHANGED, item))
        else:
            was = f"{float(had['resultScore']):g}/{float(had.get('resultMaximum') or 1):g}"
            planned.append(Planned(s, user, State.CHANGED, item, lms_had=was))
    return planned, skipped
