"""Decide points in the grader's process, from facts the submission cannot forge.

A graded cell passes when the kernel replied ``ok`` for that exact cell (the
reply echoes the nonce sent with it), the fingerprints of protected objects
taken before and after it equal the baseline taken before any student code,
and the attempt carries no flag. Printed text is never parsed for verdicts.
Any flag (integrity, static scan, runtime change, forged channel data) makes
the attempt score 0, with every reason listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .assemble import RunCell
from .run import RunResult


@dataclass
class TestResult:
    __test__ = False  # not a pytest class
    cell_id: str
    kind: str
    points: float
    earned: float
    status: str       # passed | failed | not-run | voided
    message: str = ""
    output: str = ""


@dataclass
class AnswerItem:
    cell_id: str
    question: str
    answer: str
    rubric: str
    points_possible: float


@dataclass
class Outcome:
    student: str
    exercise: str
    exercise_name: str
    path: str
    key: str
    submission_sha: str
    source_sha: str
    status: str                   # graded | flagged | rejected
    reason: str = ""
    auto_score: float = 0.0
    auto_possible: float = 0.0
    manual_possible: float = 0.0
    tests: list[TestResult] = field(default_factory=list)
    answers: list[AnswerItem] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def runtime_changes(baseline: dict | None, fp: dict | None, where: str) -> list[tuple[str, str]]:
    """``[(object, readable flag), ...]`` for what changed among the protected objects."""
    if baseline is None or fp is None:
        return [("fingerprint", f"no integrity fingerprint {where}")] if baseline is not None else []
    changes = []
    for name, value in fp.items():
        if name.startswith("notebook name "):
            if value != "ok":
                changes.append((name, f"{name[len('notebook name '):]!r}, bound by the instructor's cells, was rebound (seen {where})"))
        elif name not in baseline:
            changes.append((name, f"{name} appeared (seen {where})"))
        elif baseline[name] != value:
            changes.append((name, f"{name} was replaced or modified (seen {where})"))
    for name in baseline:
        if name not in fp:
            changes.append((name, f"{name} is missing (seen {where})"))
    return changes


def _message(ename: str, evalue: str) -> str:
    lines = evalue.strip().splitlines()
    text = "\n".join(lines[:30]) + ("\n..." if len(lines) > 30 else "")
    return f"{ename}: {text}" if text else ename


def decide(cells: list[RunCell], run: RunResult, flags: list[str]) -> tuple[list[TestResult], list[str], list[str]]:
    """``(tests, flags, notes)``: per-test results; every flag (given + found at runtime); notes on the student's cells."""
    flags = list(flags)
    flags += [f"grader channel: {e}" for e in run.channel_errors]
    by_index = {c.index: c for c in run.cells}
    tests, notes, changed = [], [], set()
    for cell in cells:
        got = by_index.get(cell.index)
        if cell.graded and got is not None and got.status in ("ok", "error"):
            for name, change in runtime_changes(run.baseline, got.fp_before, f"before {cell.label}") + \
                    runtime_changes(run.baseline, got.fp_after, f"after {cell.label}"):
                if name not in changed:
                    changed.add(name)
                    flags.append(f"runtime integrity: {change}")
        if not cell.graded:
            if got is not None and got.status == "error" and cell.role in ("solution", "student"):
                notes.append(f"{cell.label} raised {_message(got.ename, got.evalue).splitlines()[0][:300]}")
            continue
        if got is None or got.status == "not-run":
            tests.append(TestResult(cell.course_id, cell.role, cell.points, 0.0, "not-run", f"not run: {run.fault or 'the notebook stopped early'}"))
        elif got.status in ("timeout", "died"):
            tests.append(TestResult(cell.course_id, cell.role, cell.points, 0.0, "failed", run.fault))
        elif got.status == "ok":
            tests.append(TestResult(cell.course_id, cell.role, cell.points, cell.points, "passed", "", got.stdout))
        else:
            tests.append(TestResult(cell.course_id, cell.role, cell.points, 0.0, "failed", _message(got.ename, got.evalue), got.stdout))
    if flags:
        for t in tests:
            if t.status == "passed":
                t.status, t.earned, t.message = "voided", 0.0, "ran without error, but the attempt is flagged: no points"
    return tests, flags, notes
