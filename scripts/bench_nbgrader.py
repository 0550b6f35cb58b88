"""nbgrader's autograde throughput on our sample submissions, and the ratio to our grader's.

    .venv/bin/python scripts/bench_nbgrader.py [--nbgrader-venv /tmp/nbgvenv] [--ours SUBS_PER_MIN]

What it measures. The 14 sample submissions that `scripts/bench_grader.py` times
(tests/samples/submissions/{correct,unanswered,partial}__exNN_*.ipynb) are graded by
`nbgrader autograde` in one invocation, and the wall time gives submissions per minute.
Our figure is either given with --ours (e.g. 13.4 from bench_grader.py, jobs=1) or measured
here by `course grade` on the same 14 files with --jobs 1 into a throwaway gradebook.

How. In a temp dir it builds an nbgrader course: each solutions/exNN_*.ipynb becomes
source/exNN_*/exNN_*.ipynb with our `course` cell metadata mapped to nbgrader's
(locked -> read-only, solution -> solution cell, test and hidden-test -> autograded test
cells, answer -> manually graded markdown with points); `nbgrader generate_assignment`
releases it; each sample is converted the same way (keeping the student's own cells and,
for the hidden tests the student copy lacks, inserting them where our grader injects them)
and placed at submitted/<student>/<exercise>/<exercise>.ipynb.

This script is only the driver: it runs under the project venv and calls nbgrader, which
needs torch and this package installed in its own venv (see --nbgrader-venv), by path.

Caveats (read before quoting the ratio):
* nbgrader runs every test in the student's own kernel, serially, one notebook after another,
  with no sandbox, no static scan, no fingerprinting and no tamper checks; our grader does all
  of those. So this compares throughput, not equivalent guarantees.
* Hidden tests are plain nbgrader test cells here (not `### BEGIN HIDDEN TESTS` regions), and are
  present in the converted submissions. Runtime-wise they run exactly as in our grader.
* nbgrader's Execute timeout is set to our per-cell limit (300 s); its default is 30 s.
* nbgrader has no --jobs; the comparison is with our --jobs 1. Both start one Python kernel per
  submission, import torch in it, and run the same cells.
* The nbgrader time includes its own start-up (one process for all 14) and gradebook writes;
  the generate_assignment step is not timed.
* With 14 submissions on a shared 2-core machine, expect a few percent of run-to-run noise.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples" / "submissions"
KINDS = ("correct", "unanswered", "partial")
CELL_TIMEOUT = 300  # seconds, our grader's per-cell default


# ---------------------------------------------------------------- conversion


def nbgrader_meta(course: dict, cell_type: str) -> dict | None:
    """nbgrader cell metadata for one of our `course` entries (None: a plain cell)."""
    kind = course.get("kind")
    base = {"grade_id": course["id"], "schema_version": 3}
    if kind == "locked":
        return {**base, "grade": False, "locked": True, "solution": False}
    if kind == "solution":
        return {**base, "grade": False, "locked": False, "solution": True}
    if kind in ("test", "hidden-test"):
        return {**base, "grade": True, "locked": True, "solution": False, "points": course.get("points", 0)}
    if kind == "answer" and cell_type == "markdown":
        return {**base, "grade": True, "locked": False, "solution": True, "points": course.get("points", 0)}
    return None


def convert_cell(cell: dict) -> dict:
    cell = copy.deepcopy(cell)
    meta = cell.setdefault("metadata", {})
    course = meta.pop("course", None)
    if course:
        nbg = nbgrader_meta(course, cell["cell_type"])
        if nbg is not None:
            meta["nbgrader"] = nbg
    return cell


def convert_notebook(nb: dict) -> dict:
    nb = copy.deepcopy(nb)
    nb["cells"] = [convert_cell(c) for c in nb["cells"]]
    nb["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    return nb


def course_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("course", {}).get("id")


def with_hidden_tests(submission: dict, source: dict) -> dict:
    """The student's notebook plus the source's hidden tests, each after the cell that precedes it in the source."""
    nb = copy.deepcopy(submission)
    prev = None
    for cell in source["cells"]:
        if cell.get("metadata", {}).get("course", {}).get("kind") == "hidden-test":
            ids = [course_id(c) or c.get("id") for c in nb["cells"]]
            at = ids.index(prev) + 1 if prev in ids else len(nb["cells"])
            nb["cells"].insert(at, copy.deepcopy(cell))
        prev = course_id(cell) or cell.get("id")
    return nb


def write_nb(nb: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- course dir


def sample_files() -> list[tuple[str, str, Path]]:
    """(student, exercise, path) for the 14 samples bench_grader.py grades."""
    out = []
    for path in sorted(SAMPLES.glob("*__ex*.ipynb")):
        student, exercise = path.stem.split("__", 1)
        if student in KINDS:
            out.append((student, exercise, path))
    return out


def build_course(course: Path, samples: list[tuple[str, str, Path]]) -> None:
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        "c.CourseDirectory.course_id = 'bench'\n"
        f"c.Execute.timeout = {CELL_TIMEOUT}\n"
        "c.ClearSolutions.code_stub = {'python': 'raise NotImplementedError()'}\n"
    )
    for sol in sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb")):
        write_nb(convert_notebook(json.loads(sol.read_text())), course / "source" / sol.stem / sol.name)
    for student, exercise, path in samples:
        source = json.loads((ROOT / "solutions" / f"{exercise}.ipynb").read_text())
        submission = with_hidden_tests(json.loads(path.read_text()), source)
        write_nb(convert_notebook(submission), course / "submitted" / student / exercise / f"{exercise}.ipynb")


# ---------------------------------------------------------------- running


def run(cmd: list, cwd: Path, env: dict, log: Path) -> tuple[float, int]:
    t0 = time.monotonic()
    with log.open("w") as fh:
        rc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    return time.monotonic() - t0, rc


GRADES_PY = r"""
import json, sys
from nbgrader.api import Gradebook
out = []
with Gradebook("sqlite:///" + sys.argv[1]) as gb:
    for a in gb.assignments:
        for s in a.submissions:
            for nb in s.notebooks:
                tests = [g for g in nb.grades if g.cell.cell_type == "code"]
                out.append(dict(student=s.student.id, exercise=a.name, score=nb.code_score,
                                possible=nb.max_code_score, failed=nb.failed_tests, tests=len(tests)))
print(json.dumps(out))
"""


def nbgrader_grades(venv: Path, course: Path, env: dict) -> list[dict]:
    res = subprocess.run([str(venv / "bin" / "python"), "-c", GRADES_PY, str(course / "gradebook.db")],
                         env=env, capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr[-2000:])
        return []
    return json.loads(res.stdout)


def measure_ours(samples: list[tuple[str, str, Path]], work: Path) -> tuple[float, float, int]:
    subs = work / "ours-subs"
    subs.mkdir()
    for _, _, path in samples:
        shutil.copy(path, subs / path.name)
    cmd = [ROOT / ".venv" / "bin" / "course", "grade", subs, "--jobs", "1", "--no-progress",
           "--gradebook", work / "ours.sqlite", "--out", work / "ours-out"]
    wall, rc = run(cmd, ROOT, dict(os.environ), work / "ours.log")
    return 60 * len(samples) / wall, wall, rc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nbgrader-venv", type=Path, default=Path("/tmp/nbgvenv"),
                   help="venv with nbgrader, torch and this package (pip install --no-deps -e .)")
    p.add_argument("--ours", type=float, metavar="SUBS_PER_MIN",
                   help="our grader's jobs=1 throughput; if omitted, measured with `course grade --jobs 1`")
    p.add_argument("--keep", action="store_true", help="keep the temp course directory and print its path")
    args = p.parse_args(argv)

    venv = args.nbgrader_venv.resolve()
    nbgrader = venv / "bin" / "nbgrader"
    if not nbgrader.exists():
        print(f"no nbgrader at {nbgrader}; create the venv first (see the module docstring)", file=sys.stderr)
        return 2
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    env.pop("PYTHONPATH", None)
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch, compile_course; print(torch.__version__)"],
                           env=env, capture_output=True, text=True)
    if check.returncode != 0:
        print(f"{venv} lacks torch or compile_course:\n{check.stderr[-1000:]}", file=sys.stderr)
        return 2
    version = subprocess.run([str(nbgrader), "--version"], env=env, capture_output=True, text=True).stdout
    version = re.search(r"nbgrader version (\S+)", version)

    samples = sample_files()
    work = Path(tempfile.mkdtemp(prefix="bench-nbgrader-"))
    course = work / "course"
    course.mkdir()
    try:
        build_course(course, samples)
        print(f"nbgrader {version.group(1) if version else '?'} (torch {check.stdout.strip()} in {venv}); "
              f"{len(samples)} sample submissions, {len({e for _, e, _ in samples})} assignments")

        wall, rc = run([nbgrader, "generate_assignment", "ex*"], course, env, work / "generate.log")
        if rc != 0:
            print(f"generate_assignment failed (exit {rc}); log:\n{(work / 'generate.log').read_text()[-3000:]}")
            return 1
        print(f"generate_assignment: {wall:.1f} s (not counted)")

        wall, rc = run([nbgrader, "autograde", "ex*"], course, env, work / "autograde.log")
        grades = nbgrader_grades(venv, course, env)
        done = {(g["student"], g["exercise"]) for g in grades}
        autograded = [(s, e) for s, e, _ in samples
                      if (course / "autograded" / s / e / f"{e}.ipynb").exists() and (s, e) in done]
        nbg_rate = 60 * len(samples) / wall
        print(f"nbgrader autograde: {len(samples)} in {wall:.1f} s = {nbg_rate:.1f} submissions/min "
              f"(exit {rc}; {len(autograded)}/{len(samples)} autograded)")
        for g in sorted(grades, key=lambda g: (g["exercise"], g["student"])):
            print(f"  {g['student']:11} {g['exercise']:28} tests {g['score']:g}/{g['possible']:g}"
                  f"  failed tests: {'yes' if g['failed'] else 'no'}")
        if len(autograded) < len(samples) or rc != 0:
            print(f"autograde log tail:\n{(work / 'autograde.log').read_text()[-3000:]}")

        if args.ours is not None:
            ours, how = args.ours, "given on the command line"
        else:
            ours, ours_wall, ours_rc = measure_ours(samples, work)
            how = f"measured: `course grade --jobs 1`, {len(samples)} in {ours_wall:.1f} s, exit {ours_rc}"
        print(f"ours: {ours:.1f} submissions/min ({how})")
        print(f"ratio nbgrader / ours = {nbg_rate / ours:.2f}  (ours / nbgrader = {ours / nbg_rate:.2f})")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
