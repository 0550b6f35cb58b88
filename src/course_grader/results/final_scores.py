"""Which scores of a gradebook are final, to leave the grader for an LMS: one per student and exercise.

A score is final when the attempt that counts was graded and every written answer of it was reviewed.
Every other attempt is withheld, with the reason an instructor acts on:

* flagged: it scores 0 until an instructor clears the flag (``course grade clear-flag``);
* written answers still to review: its score is not complete (``course grade import-review``);
* rejected: the grader could not grade the file (the reason says why); no score was computed;
* a grader fault: not a grade at all (grade again).

A file that names no student is never in the gradebook at all (``OUT/unattributed.txt`` lists them).
This module only reads; :mod:`.posted` records what was sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from course_grader.status import AttemptStatus

from .gradebook import Gradebook


@dataclass(frozen=True)
class FinalScore:
    """The score of the attempt that counts for one student and exercise, or why there is none to send."""

    student: str
    exercise: str          # "ex01"
    title: str
    attempt: str           # the attempt's key
    given: float
    maximum: float
    withheld: str = ""     # "" when the score is final

    @property
    def final(self) -> bool:
        return not self.withheld


WITHHELD = {
    AttemptStatus.FLAGGED: "flagged: it scores 0 until you clear the flag (course grade clear-flag)",
    AttemptStatus.REJECTED: "rejected by the grader, no score: {reason}",
    AttemptStatus.FAULT: "a grader fault, not a grade: grade it again",
}
PENDING = "written answers still to review (course grade import-review)"


def final_scores(book: Gradebook) -> list[FinalScore]:
    """Every (student, exercise) of the gradebook, sorted, each final or withheld with its reason."""
    out = []
    for r in book.current():
        if not r["exercise_name"]:     # a rejected file that is no exercise of the course
            continue
        manual, reviewed = book.manual_score(r["key"])
        status = AttemptStatus(r["status"])
        withheld = WITHHELD.get(status, "").format(reason=r["reason"])
        if not withheld and r["manual_possible"] and not reviewed:
            withheld = PENDING
        out.append(FinalScore(r["student"], r["exercise"], r["title"] or r["exercise_name"], r["key"],
                              r["auto_score"] + manual, r["auto_possible"] + r["manual_possible"], withheld))
    return out
