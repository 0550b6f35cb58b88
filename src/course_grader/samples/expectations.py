"""The bundled samples' expectations: a gradebook compared with ``expected.json``, and ``grade_samples``
(regenerate the samples, grade them with ``grade_class``, compare). On top of the pipeline: the
pipeline never imports the samples."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from compile_course.paths import BUILD, ROOT, SOLUTIONS
from course_grader.config import GradeOptions
from course_grader.errors import GraderError
from course_grader.pipeline.grade_class import grade_class
from course_grader.results.gradebook import Gradebook
from course_grader.samples import make_samples


def check_expectations(book: Gradebook, expected: dict[str, dict]) -> list[str]:
    """Every way the gradebook disagrees with the samples' expectations (``{file name: {...}}``)."""
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
        elif "points" in want and score != want["points"]:
            problems.append(f"{fname}: {score:g}/{possible:g} (expected exactly {want['points']:g})")
        text = r["reason"] + " " + r["notes"]
        if want.get("reason") and not re.search(want["reason"], text, re.I):
            problems.append(f"{fname}: reason {r['reason']!r} does not mention {want['reason']!r}")
    return problems


def grade_samples(out_dir: Path = BUILD / "samples-grading", jobs: int | None = None, solutions: Path = SOLUTIONS,
                  progress: bool = True, **kwargs) -> tuple[str, bool]:
    """Regenerate the bundled samples from ``solutions`` into ``out_dir/submissions``, grade them with
    :func:`grade_class` into ``out_dir`` (never a class's folder), and compare with their expectations.
    ``(one-line summary, the grader worked and every sample got its expected verdict)``."""
    out_dir = Path(out_dir)
    subs = out_dir / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    expected = make_samples(Path(solutions), subs)
    try:
        report = grade_class(subs, out_dir, solutions=solutions, jobs=jobs or GradeOptions().jobs, progress=progress,
                             title="Bundled sample submissions", **kwargs)
    except GraderError as exc:
        return f"sample submissions: GRADER FAULT: {exc}", False
    with Gradebook(report.gradebook) as book:
        problems = check_expectations(book, expected) + [f"grader fault: {f}" for f in report.faults]
    for p in problems:
        print(f"  sample check: {p}")
    wrong = {p.split(":")[0] for p in problems if not p.startswith("grader fault")}
    where = out_dir.resolve().relative_to(ROOT) if out_dir.resolve().is_relative_to(ROOT) else out_dir
    line = (f"sample submissions graded: {len(expected)} ({len(report.graded)} new, {report.skipped} unchanged), "
            f"{len(expected) - len(wrong)} as expected{'' if not problems else f', {len(problems)} PROBLEMS'}"
            f"   -> {where}/")
    return line, not problems


def check_graded(samples: Path, graded: Path, exercise: str | None = None) -> int:
    """Print every sample whose grade differs from its expected.json entry; 0 when none does."""
    from course_grader.results.gradebook import Gradebook

    expected = json.loads((Path(samples) / "expected.json").read_text(encoding="utf-8"))
    if exercise:
        expected = {name: e for name, e in expected.items() if f"__{exercise}_" in name}
    book_path = GradeOptions().gradebook_in(graded)
    if not book_path.is_file():
        print(f"no gradebook in {graded}: grade the samples first (course grade run {samples} --out {graded})")
        return 2
    problems = check_expectations(Gradebook(book_path), expected)
    for line in problems:
        print(line)
    print(f"{len(expected)} samples expected, {len(problems)} differ")
    return 1 if problems else 0
