"""Grade the bundled sample submissions and check that each got the verdict it should.

Used by ``course run`` (step 4) and by the tests. The samples are regenerated
from the current ``solutions/`` by ``tests/samples/make_samples.py`` into
``OUT_DIR/submissions`` first, so they always match the exercises.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

from ..paths import ROOT, SOLUTIONS
from .export import export_grades, export_review
from .feedback import render_all
from .grade import Settings, grade_all, instructor_paths
from .gradebook import Gradebook
from .load import discover
from .run import Limits
from .source import load_sources

SAMPLE_LIMITS = dict(cell_timeout=60.0, submission_timeout=300.0)


def _make_samples_module():
    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "tests" / "samples" / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_expectations(book: Gradebook, expected: dict[str, dict]) -> list[str]:
    """Every way the gradebook disagrees with ``expected.json``."""
    rows = {Path(r["path"]).name: r for r in book.current()}
    problems = []
    for fname, want in sorted(expected.items()):
        r = rows.get(fname)
        if r is None:
            problems.append(f"{fname}: not graded")
            continue
        if r["status"] != want["status"]:
            problems.append(f"{fname}: status {r['status']} (expected {want['status']}): {r['reason']}")
        score, possible = r["auto_score"], r["auto_possible"]
        ok = {"full": score == possible, "zero": score == 0, "partial": 0 < score < possible}[want["score"]]
        if not ok:
            problems.append(f"{fname}: {score:g}/{possible:g} (expected {want['score']})")
        text = r["reason"] + " " + r["notes"]
        if want.get("reason") and not re.search(want["reason"], text, re.I):
            problems.append(f"{fname}: reason {r['reason']!r} does not mention {want['reason']!r}")
    return problems


def grade_samples(out_dir: Path, jobs: int, solutions: Path | None = None, progress: bool = True,
                  limits: Limits | None = None) -> tuple[str, bool]:
    """``(one-line summary, grader worked)``; grader worked = no fault and every sample got its expected verdict."""
    solutions = Path(solutions or SOLUTIONS)
    out_dir = Path(out_dir)
    subs = out_dir / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    expected = _make_samples_module().make_samples(solutions, subs)
    sources = load_sources(solutions)
    gradebook = out_dir / "gradebook.sqlite"
    book = Gradebook(gradebook)
    try:
        settings = Settings(limits=limits or Limits(**SAMPLE_LIMITS), hide=instructor_paths(solutions, out_dir))
        report = grade_all(discover(subs), sources, book, settings, jobs, progress=progress)
        render_all(book, out_dir)
        export_grades(book, out_dir / "grades.csv")
        export_review(book, out_dir / "review.csv")
        problems = check_expectations(book, expected) + [f"grader fault: {f}" for f in report.faults]
    finally:
        book.close()
    for p in problems:
        print(f"  sample check: {p}")
    ok = not problems
    wrong = {p.split(":")[0] for p in problems if not p.startswith("grader fault")}
    line = (f"sample submissions graded: {len(expected)} ({len(report.graded)} new, {report.skipped} unchanged), "
            f"{len(expected) - len(wrong)} as expected"
            f"{'' if ok else f', {len(problems)} PROBLEMS'}   -> {out_dir.relative_to(ROOT) if out_dir.is_relative_to(ROOT) else out_dir}/")
    return line, ok
