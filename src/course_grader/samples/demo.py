"""The demonstration grading of ``course run``: one bundled sample of each kind, graded for real.

Grading all 123 bundled samples (``samples.expectations.grade_samples``) takes about 10 minutes on two
busy cores, 7 of them on the two infinite loops, which run into the full CPU limits
(``sandbox.Limits``: 60 CPU-s a cell, each loop confirmed by a second run alone). The tests
grade them all (``tests/e2e/test_samples_e2e.py``). ``course run`` shows a student
the grader at work on a small class instead: :func:`representative` picks one sample of each
kind, by a rule, and :func:`grade_demo` grades them through the real pipeline (sandbox,
harnesses, verdicts) and checks each verdict against the sample's expectation, as
``grade_samples`` does. A sample that must run out of its CPU time is graded apart, under
:data:`DEMO_LIMITS` (a few CPU-seconds a cell); its expected reason must still hold.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from compile_course.paths import BUILD, SOLUTIONS

from ..sandbox.limits import Limits
from . import notebook_bytes, samples_for

# The kinds of bundled sample, in the order the demo grades them (a sample's kind is its name up
# to the first "-": correct, tamper-edit-test, adv-exec-source, ...). A kind not listed here is
# still graded, after these; tests/course_grader/samples/test_samples_demo.py fails until it is listed.
KINDS = ("correct", "partial", "unanswered", "wrong", "tamper", "bad", "crash", "adv", "hostile", "honest")
DEMO_CPU_S_PER_CELL = 5
# CPU-s per cell and per measuring request; the wall backstop scales with it (Limits.scaled)
DEMO_LIMITS = Limits.scaled(DEMO_CPU_S_PER_CELL)
LIMITED_FOLDER = "submissions-cpu-limit"  # beside submissions/, graded under DEMO_LIMITS


def sample_kind(fname: str) -> str:
    return fname.split("__", 1)[0].split("-", 1)[0]


def sample_exercise(fname: str) -> str:
    return fname.split("__", 1)[1].removesuffix(".ipynb")


def runs_out_of_cpu(expect: dict) -> bool:
    """The sample's expected reason names the CPU limit (an infinite loop in measured code)."""
    return bool(re.search(r"cpu", expect.get("reason", ""), re.IGNORECASE))


def representative(expected: dict[str, dict]) -> list[str]:
    """One sample file of each kind, in :data:`KINDS` order. Within a kind the rule prefers, in turn:
    a sample that runs out of its CPU time (what the sandbox is for: the crash kind's infinite loop),
    an exercise no earlier pick covers (so the class spans the exercises), an expectation with a
    reason the grader must give, and then the first name."""
    kinds = sorted({sample_kind(f) for f in expected},
                   key=lambda k: (KINDS.index(k) if k in KINDS else len(KINDS), k))
    chosen: list[str] = []
    covered: set[str] = set()
    for kind in kinds:
        best = min((f for f in expected if sample_kind(f) == kind),
                   key=lambda f: (not runs_out_of_cpu(expected[f]), sample_exercise(f) in covered,
                                  "reason" not in expected[f], f))
        chosen.append(best)
        covered.add(sample_exercise(best))
    return chosen


def _describe(want: dict) -> str:
    text = want["status"] + (f", {want['score']}" if want["status"] == "graded" else "")
    if "points" in want:
        text += f" ({want['points']:g} points)"
    return text + (f", reason ~ {want['reason']!r}" if want.get("reason") else "")


def grade_demo(out_dir: Path = BUILD / "samples-grading", jobs: int | None = None, solutions: Path = SOLUTIONS,
               progress: bool = True, **kwargs) -> tuple[str, bool]:
    """Write the :func:`representative` samples into ``out_dir/submissions`` (and the CPU-limit
    ones into ``out_dir/submissions-cpu-limit``), grade both with ``grade_class`` into ``out_dir``,
    one gradebook and one feedback index, and compare every verdict with its expectation.
    ``(one-line summary, the grader worked and every sample got its expected verdict)``.
    ``kwargs`` go to both ``grade_class`` calls (tests pass a fake host); ``jobs`` not given: ``GradeOptions``'."""
    from course_grader.config import GradeOptions
    from course_grader.errors import GraderError
    from course_grader.exercise.model import load_exercises
    from course_grader.pipeline.grade_class import grade_class
    from course_grader.results.export import export_grades, export_review
    from course_grader.results.feedback import render_all
    from course_grader.results.gradebook import Gradebook
    from course_grader.results.private import seal_tree
    from course_grader.samples.expectations import check_expectations

    out_dir = Path(out_dir)
    every = samples_for(load_exercises(Path(solutions)))
    expected_all = {name: expect for name, (_, expect) in every.items()}
    chosen = representative(expected_all)
    expected = {name: expected_all[name] for name in chosen}
    limited = [name for name in chosen if runs_out_of_cpu(expected[name])]
    groups = [("submissions", [n for n in chosen if n not in limited], {}),
              (LIMITED_FOLDER, limited, {"limits": DEMO_LIMITS, "warm": False})]
    print(f"  {len(chosen)} of the {len(every)} bundled samples, one of each kind "
          f"(tests/e2e/test_samples_e2e.py grades all of them):", flush=True)
    for name in chosen:
        note = f"   [graded under {DEMO_CPU_S_PER_CELL} CPU-s a cell]" if name in limited else ""
        print(f"    {sample_kind(name):<11} {name:<58} expected: {_describe(expected[name])}{note}", flush=True)

    reports, faults = [], []
    for folder, names, options in groups:
        subs = out_dir / folder
        shutil.rmtree(subs, ignore_errors=True)
        subs.mkdir(parents=True)
        for name in names:
            (subs / name).write_bytes(notebook_bytes(every[name][0]))
        (subs / "expected.json").write_text(json.dumps({n: expected[n] for n in names}, indent=1, sort_keys=True,
                                                       ensure_ascii=False) + "\n")
        if not names:
            continue
        try:
            reports.append(grade_class(subs, out_dir, solutions=solutions, jobs=jobs or GradeOptions().jobs,
                                       progress=progress,
                                       title="Bundled sample submissions: one of each kind", **options, **kwargs))
        except GraderError as exc:
            faults.append(f"{folder}: GRADER FAULT: {exc}")

    students = {name.split("__", 1)[0] for name in chosen}
    gradebook = GradeOptions().gradebook_in(out_dir)
    problems = list(faults) + [f"grader fault: {f}" for r in reports for f in r.faults]
    if gradebook.exists():
        with Gradebook(gradebook) as book:
            problems = check_expectations(book, expected) + problems
            # each grade_class call wrote the index and CSVs of its own students: write them for the whole demo
            render_all(book, out_dir, None, students, "Bundled sample submissions: one of each kind")
            export_grades(book, out_dir / "grades.csv", None, students)
            export_review(book, out_dir / "review.csv", None, students)
        seal_tree(out_dir)
    else:
        problems.append("nothing was graded")
    for p in problems:
        print(f"  sample check: {p}", flush=True)
    wrong = {p.split(":")[0] for p in problems if p.split(":")[0] in expected}
    new = sum(len(r.graded) for r in reports)
    unchanged = sum(r.skipped for r in reports)
    line = (f"{len(chosen)} of the {len(every)} samples, one of each kind: {len(chosen) - len(wrong)} as expected"
            f"{f', {len(problems)} PROBLEMS' if problems else ''} ({new} graded now, {unchanged} unchanged)")
    return line, not problems


def main(argv: list[str] | None = None) -> int:
    """``python -m course_grader.samples.demo [--out DIR] [--jobs N]``: :func:`grade_demo`, its summary line
    last; exit 0 when every sample got its expected verdict (``course run`` starts it beside the lessons)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m course_grader.samples.demo", allow_abbrev=False,
                                     description="grade one bundled sample of each kind, as course run does")
    parser.add_argument("--out", type=Path, default=BUILD / "samples-grading")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    line, ok = grade_demo(args.out, jobs=args.jobs, progress=False)
    print(line, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
