"""Grade one submission (load, match, assemble, scan, run, decide) and a whole folder in parallel.

Workers are threads, each driving one kernel process at a time; the calling
thread is the only gradebook writer, and writes each attempt as soon as it is
decided, so an interrupted run loses at most the attempts in flight.
"""

from __future__ import annotations

import queue
import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import ROOT
from . import GRADER_VERSION
from .assemble import assemble
from .gradebook import Gradebook, attempt_key
from .integrity import answer_text, match_cells
from .load import MAX_FILE_BYTES, Found, read_submission, sha256_file
from .run import Limits, run_cells
from .scan import scan_cells
from .source import ExerciseSource
from .verdict import AnswerItem, Outcome, decide

FIRST_UID = 61000   # kernels run as uid FIRST_UID + worker slot when the grader is root


def instructor_paths(solutions: Path, *extra: Path) -> list[Path]:
    """Directories a grading kernel must not see: the hidden tests, the course's .git,
    build/ and tests/, plus ``extra`` (the gradebook's folder, the output, the submissions)."""
    paths = [solutions, ROOT / ".git", ROOT / "build", ROOT / "tests", *extra]
    return sorted({Path(p).resolve() for p in paths if Path(p).resolve() != Path("/")})


@dataclass
class Settings:
    limits: Limits = field(default_factory=Limits)
    max_file_bytes: int = MAX_FILE_BYTES
    hide: list[Path] = field(default_factory=list)   # directories the kernels must not see
    isolate_uid: bool = True


def grade_one(found: Found, sources: dict[str, ExerciseSource], settings: Settings, slot: int = 0) -> Outcome:
    source = sources.get(found.exercise)
    loaded = read_submission(found, settings.max_file_bytes)
    source_sha = source.sha256 if source else ""
    key = attempt_key(found.student, found.exercise, loaded.sha256, source_sha, GRADER_VERSION)
    outcome = Outcome(found.student, found.exercise, source.name if source else found.exercise, str(found.path), key,
                      loaded.sha256, source_sha, "rejected", notices=list(loaded.notices))
    if source is None:
        outcome.reason = f"no exercise matches this file name (known: {', '.join(sorted(sources)) or 'none'})"
        return outcome
    outcome.auto_possible, outcome.manual_possible = source.auto_points, source.manual_points
    if loaded.notebook is None:
        outcome.reason = loaded.reason
        return outcome
    matched = match_cells(source, loaded.notebook)
    if matched.reject:
        outcome.reason = matched.reject
        return outcome
    outcome.notices += [f"{f.cell_id}: {f.text}" for f in matched.notices]
    outcome.answers = [AnswerItem(c.course_id, source.question_for(c), answer_text(matched, c.course_id), c.rubric, c.points)
                       for c in source.cells if c.kind == "answer"]
    cells = assemble(source, matched)
    flags = [f"{f.cell_id}: {f.text}" for f in matched.flags]
    flags += [f"static scan, {label}, {text}" for label, text in scan_cells(cells)]
    uid = FIRST_UID + slot if settings.isolate_uid else None
    run = run_cells(cells, settings.limits, settings.hide, uid)
    outcome.tests, outcome.flags, outcome.notes = decide(cells, run, flags)
    outcome.notices += [f"sandbox: {m}" for m in run.sandbox_missing]
    outcome.seconds = run.seconds
    outcome.auto_score = sum(t.earned for t in outcome.tests)
    if outcome.flags:
        outcome.status = "flagged"
        outcome.reason = f"flagged for the instructor: {outcome.flags[0]}" + (f" (+{len(outcome.flags) - 1} more)" if len(outcome.flags) > 1 else "")
    else:
        outcome.status = "graded"
        outcome.reason = run.fault or (outcome.notes[0] if outcome.notes and outcome.auto_score == 0 else "")
    return outcome


def planned_key(found: Found, sources: dict[str, ExerciseSource]) -> str:
    source = sources.get(found.exercise)
    return attempt_key(found.student, found.exercise, sha256_file(found.path), source.sha256 if source else "", GRADER_VERSION)


@dataclass
class BatchReport:
    graded: list[Outcome] = field(default_factory=list)
    skipped: int = 0
    faults: list[str] = field(default_factory=list)   # grader faults: these make the command fail


def grade_all(found: list[Found], sources: dict[str, ExerciseSource], book: Gradebook, settings: Settings,
              jobs: int, progress: bool = True) -> BatchReport:
    report = BatchReport()
    todo = []
    for f in found:
        if book.has(planned_key(f, sources)):
            report.skipped += 1
        else:
            todo.append(f)
    slots: queue.Queue[int] = queue.Queue()
    for i in range(max(1, jobs)):
        slots.put(i)

    def job(f: Found) -> Outcome:
        slot = slots.get()
        try:
            return grade_one(f, sources, settings, slot)
        finally:
            slots.put(slot)

    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="nb", desc="grading", file=sys.stderr, dynamic_ncols=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending = {pool.submit(job, f): f for f in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                f = pending.pop(fut)
                try:
                    outcome = fut.result()
                    book.record(outcome, GRADER_VERSION)
                    report.graded.append(outcome)
                except Exception as exc:  # a bug in the grader, not in the submission
                    report.faults.append(f"{f.path}: {type(exc).__name__}: {exc}")
                if bar:
                    bar.update(1)
    if bar:
        bar.close()
    return report
