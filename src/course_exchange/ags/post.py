"""Posting a gradebook's final scores to the LMS, one at a time, each recorded as soon as the LMS took it.

The order of one run: read the LMS's line items and results (:mod:`.client`), decide (:mod:`.plan`),
print what will be posted and what is skipped and why; then, unless it is a dry run, create the missing
line items and post every ``new`` or ``changed`` score, writing each to the gradebook's record of posts
(``api.Post``) right after the LMS answered 2xx. A score the LMS already holds is recorded too (``found``)
when the gradebook has no record of it yet: the record then says what the LMS holds from this gradebook.

When the LMS fails (HTTP 5xx, a time-out, a refused token after one renewal), the run stops at that
score: what was posted before it is recorded, nothing after it was sent, and the same command posts what
is left (it decides again from the LMS's results, so a score that reached the LMS while its answer was
lost is found there and not sent twice).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime

from course_grader.api import LmsScores, Post

from .client import AgsClient, LmsError
from .plan import Planned, Skip, State, decide


@dataclass
class Outcome:
    planned: list[Planned] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    posted: list[Planned] = field(default_factory=list)      # sent now, and taken by the LMS
    failed: str = ""                                          # why the run stopped, "" when it did not

    @property
    def left(self) -> list[Planned]:
        done = {id(p) for p in self.posted}
        return [p for p in self.planned if p.state is not State.UNCHANGED and id(p) not in done]


def look(book: LmsScores, client: AgsClient, users: dict[str, str]) -> Outcome:
    """Read the LMS and decide; sends nothing, writes nothing."""
    scores = book.scores()
    items = client.line_items()
    results = {ex: client.results(item) for ex, item in items.items()
               if any(s.exercise == ex for s in scores)}
    planned, skipped = decide(scores, users, items, results)
    return Outcome(planned, skipped)


def send(book: LmsScores, client: AgsClient, outcome: Outcome) -> Outcome:
    """Post every new or changed score of ``outcome``; stop at the first failure (``outcome.failed``)."""
    recorded = book.posts()
    made: dict[str, dict] = {}
    for p in outcome.planned:
        s = p.score
        if p.state is State.UNCHANGED:
            mine = recorded.get((s.student, s.exercise))
            if not mine or mine.attempt != s.attempt or mine.given != s.given or mine.lms_user != p.lms_user:
                book.record(Post(s.student, s.exercise, s.attempt, p.lms_user, p.line_item["id"], s.given,
                                 s.maximum, "found"))
            continue
        try:
            item = p.line_item or made.get(s.exercise)
            if item is None:
                item = made[s.exercise] = client.create_line_item(s.exercise, s.title, s.maximum)
            p.line_item = item
            stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
            client.post_score(item, p.lms_user, s.given, s.maximum, stamp)
        except LmsError as exc:
            outcome.failed = f"{s.student} {s.exercise}: {exc}"
            break
        book.record(Post(s.student, s.exercise, s.attempt, p.lms_user, item["id"], s.given, s.maximum, "posted"))
        outcome.posted.append(p)
    return outcome


def table(title: str, outcome: Outcome, after: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    from course_grader.api import console

    t = Table(title=title, title_justify="left")
    for col in ("student", "exercise", "score", "LMS had", "state" if not after else "result"):
        t.add_column(col, overflow="fold")
    posted = {id(p) for p in outcome.posted}
    for p in outcome.planned:
        s = p.score
        if not after:
            state = p.state.value + ("" if p.line_item or p.state is State.UNCHANGED else " (line item to create)")
        elif p.state is State.UNCHANGED:
            state = "unchanged"
        else:
            state = p.state.value if id(p) in posted else "NOT POSTED (left for the next run)"
        cells = (s.student, s.exercise, f"{s.given:g}/{s.maximum:g}", p.lms_had or ("-" if p.state is State.NEW
                 else f"{s.given:g}/{s.maximum:g}"), state)
        t.add_row(*(Text(c) for c in cells))
    console().print(t)


def report_skipped(book: LmsScores, outcome: Outcome) -> None:
    for k in outcome.skipped:
        print(f"skipped: {k.student} {k.exercise}: {k.reason}")
    if lines := book.unattributed():
        print(f"never posted: {len(lines)} file(s) that named no student ({book.out / 'unattributed.txt'})")


def run(book: LmsScores, client: AgsClient, users: dict[str, str], dry_run: bool) -> int:
    """The whole command on an open gradebook; 0 when everything that may be posted is in the LMS."""
    try:
        outcome = look(book, client, users)
    except LmsError as exc:
        print(f"course grade post-scores: {exc}; nothing was posted", file=sys.stderr)
        return 1
    counts = {st: sum(p.state is st for p in outcome.planned) for st in State}
    table(f"{'Dry run: ' if dry_run else ''}to post to {client.target.lineitems_url}", outcome, after=False)
    report_skipped(book, outcome)
    print(f"will post {counts[State.NEW]} new and {counts[State.CHANGED]} changed; {counts[State.UNCHANGED]} "
          f"unchanged; {len(outcome.skipped)} skipped")
    if dry_run:
        print("dry run: nothing was posted and nothing was recorded")
        return 0
    send(book, client, outcome)
    if not (counts[State.NEW] or counts[State.CHANGED]):
        print(f"nothing to send: the LMS holds every score already; recorded in {book.path}")
        return 0
    table("Posted", outcome, after=True)
    new = sum(p.state is State.NEW for p in outcome.posted)
    print(f"posted {len(outcome.posted)} ({new} new, {len(outcome.posted) - new} changed), "
          f"{counts[State.UNCHANGED]} unchanged, {len(outcome.skipped)} skipped; recorded in {book.path}")
    if outcome.failed:
        print(f"course grade post-scores: stopped at {outcome.failed}. {len(outcome.left)} score(s) not posted; "
              "what was posted is recorded. Run the same command again to post the rest.", file=sys.stderr)
        return 1
    return 0
