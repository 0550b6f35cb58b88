"""nbgrader 0.9.6 and our grader on the same submissions, in one run: throughput and ratio, 1 and 2 workers.

    .venv/bin/python scripts/bench_nbgrader.py [--kinds correct unanswered partial] [--copies 1] [--keep]

First use: nbgrader is not in requirements.txt (it pulls in the Jupyter server stack), so
this script creates its own venv at build/nbgrader-venv and installs nbgrader==0.9.6 there
(about a minute; later runs reuse it). A ``.pth`` file in that venv appends this project's
.venv site-packages and src/ to its path, so nbgrader's kernels import the same torch and
``compile_course`` as ours without a second copy of torch.

What is measured. The sample submissions ``{correct,unanswered,partial}__exNN_*.ipynb``
(tests/samples/submissions), each with its student's name written into its functions'
docstrings (``bench_class.distinct_copy``: no submission's code equals a model answer's, as in
a real class, so our grader cannot answer it from the measurements of the warm-up), are graded

* by ``nbgrader autograde``: the solutions become an nbgrader course (locked -> read-only,
  solution -> solution cell, test and hidden-test -> autograded test cells, answer ->
  manually graded markdown); each sample is converted the same way, with the hidden tests
  inserted where the student copy lacks them. nbgrader has no --jobs: "2 workers" means two
  ``nbgrader autograde`` processes at once, each on its own course folder with half the
  students (wall time: the slower one);
* by ours: ``course_grader.pipeline.grade_class.grade_class`` (the function ``course grade`` calls)
  with --jobs 1 and 2, into a throwaway output folder, twice. Its wall time includes starting
  the sandbox and the warm-up. The "first run" starts from an empty warm-up store
  (``$COURSE_GRADER_STORE``, a temporary folder): it grades the model answers, as the first
  run of a new course version (torch, grader or exercises changed) does. The "later run"
  reuses that store, as every later run of the same version does (``cache_store``).

It prints submissions per minute for each and the ratio ours / nbgrader for 1 and 2 workers,
first and later run (the goal: >= 3 with 1 worker). Figures, not assertions.

Read before quoting the ratio: nbgrader runs every test, hidden ones included, in the
student's own kernel, with no sandbox; ours runs the notebook once in a sandboxed kernel for
feedback and computes verdicts in the trusted process from sandboxed measurements. This
compares throughput, not guarantees. On a shared 2-core machine expect run-to-run noise.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SAMPLES = ROOT / "tests" / "samples" / "submissions"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_class import write_distinct  # noqa: E402

NBGRADER_VENV = ROOT / "build" / "nbgrader-venv"
NBGRADER_PIN = "nbgrader==0.9.6"
CELL_TIMEOUT = 300  # seconds per cell for nbgrader (its default, 30 s, is too short for a cold compile)


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


def sample_files(kinds: list[str]) -> list[tuple[str, str, Path]]:
    """(student, exercise, path) for the samples of the given kinds."""
    out = []
    for path in sorted(SAMPLES.glob("*__ex*.ipynb")):
        student, exercise = path.stem.split("__", 1)
        if student in kinds:
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
    exercises = {e for _, e, _ in samples}
    for sol in sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb")):
        if sol.stem in exercises:
            write_nb(convert_notebook(json.loads(sol.read_text())), course / "source" / sol.stem / sol.name)
    for student, exercise, path in samples:
        source = json.loads((ROOT / "solutions" / f"{exercise}.ipynb").read_text())
        submission = with_hidden_tests(json.loads(path.read_text()), source)
        write_nb(convert_notebook(submission), course / "submitted" / student / exercise / f"{exercise}.ipynb")


# ---------------------------------------------------------------- nbgrader


def ensure_nbgrader_venv(venv: Path = NBGRADER_VENV) -> Path:
    """build/nbgrader-venv with nbgrader 0.9.6, seeing this project's torch and src/ (created on first use)."""
    nbgrader = venv / "bin" / "nbgrader"
    if not nbgrader.exists():
        print(f"first use: creating {venv.relative_to(ROOT)} with {NBGRADER_PIN} (about a minute)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", NBGRADER_PIN], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # Appended after nbgrader's own packages: torch and compile_course come from the project's venv.
    (Path(site) / "zz_course_project.pth").write_text(f"{ours}\n{ROOT / 'src'}\n")
    return venv


def run(cmd: list, cwd: Path, env: dict, log: Path) -> subprocess.Popen:
    fh = log.open("w")
    proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    proc.log = fh  # closed by wait_all
    return proc


def wait_all(procs: list[subprocess.Popen]) -> list[int]:
    codes = []
    for proc in procs:
        codes.append(proc.wait())
        proc.log.close()
    return codes


GRADES_PY = r"""
import json, sys
from nbgrader.api import Gradebook
out = []
with Gradebook("sqlite:///" + sys.argv[1]) as gb:
    for a in gb.assignments:
        for s in a.submissions:
            for nb in s.notebooks:
                out.append(dict(student=s.student.id, exercise=a.name, score=nb.code_score,
                                possible=nb.max_code_score, failed=nb.failed_tests))
print(json.dumps(out))
"""


def nbgrader_grades(venv: Path, course: Path, env: dict) -> list[dict]:
    res = subprocess.run([str(venv / "bin" / "python"), "-c", GRADES_PY, str(course / "gradebook.db")],
                         env=env, capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr[-2000:])
        return []
    return json.loads(res.stdout)


def bench_nbgrader(venv: Path, samples, workers: int, work: Path, env: dict) -> tuple[float, list[dict]]:
    """Wall time of ``workers`` concurrent ``nbgrader autograde`` runs over the samples, and the grades."""
    students = sorted({s for s, _, _ in samples})
    shares = [students[i::workers] for i in range(workers)]
    courses = []
    for n, share in enumerate(shares):
        course = work / f"nbgrader-{workers}w-{n}"
        course.mkdir()
        build_course(course, [x for x in samples if x[0] in share])
        wait_all([run([venv / "bin" / "nbgrader", "generate_assignment", "ex*"], course, env, course / "generate.log")])
        courses.append(course)
    t0 = time.monotonic()
    codes = wait_all([run([venv / "bin" / "nbgrader", "autograde", "ex*"], c, env, c / "autograde.log")
                      for c in courses])
    wall = time.monotonic() - t0
    grades = [g for c in courses for g in nbgrader_grades(venv, c, env)]
    if any(codes) or len(grades) < len(samples):
        print(f"  nbgrader exit codes {codes}; {len(grades)}/{len(samples)} graded; log tail:\n"
              + (courses[0] / "autograde.log").read_text()[-2000:])
    return wall, grades


# ---------------------------------------------------------------- ours


def bench_ours(samples, workers: int, work: Path, store: Path, label: str):
    """Wall time of ``grade_class`` over the samples, its warm-up kept in ``store``."""
    from course_grader.pipeline import cache_store
    from course_grader.pipeline.grade_class import grade_class

    subs = work / f"ours-subs-{workers}-{label}"
    subs.mkdir()
    for _, _, path in samples:
        shutil.copy(path, subs / path.name)
    os.environ[cache_store.STORE_ENV] = str(store)
    t0 = time.monotonic()
    report = grade_class(subs, work / f"ours-out-{workers}-{label}", jobs=workers, progress=False)
    return time.monotonic() - t0, report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--kinds", nargs="+", default=["correct", "unanswered", "partial"])
    p.add_argument("--copies", type=int, default=1,
                   help="students per sample (a larger class: the first run's warm-up weighs less)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--keep", action="store_true", help="keep the temp folders and print their path")
    args = p.parse_args(argv)

    venv = ensure_nbgrader_venv()
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    env.pop("PYTHONPATH", None)
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch, compile_course, nbgrader; "
                            "print(torch.__version__, nbgrader.__version__)"], env=env, capture_output=True, text=True)
    if check.returncode != 0:
        print(f"{venv} cannot import torch, compile_course and nbgrader:\n{check.stderr[-1000:]}", file=sys.stderr)
        return 2
    torch_version, nbg_version = check.stdout.split()
    work = Path(tempfile.mkdtemp(prefix="bench-nbgrader-"))
    # each sample as its student hands it in (bench_class): no copy equals a model answer
    samples = [(name, exercise, write_distinct(path, name, work / "class" / f"{name}__{exercise}.ipynb"))
               for student, exercise, path in sample_files(args.kinds)
               for name in ([student] if args.copies == 1 else [f"{student}-{c}" for c in range(args.copies)])]
    print(f"nbgrader {nbg_version} vs course_grader, torch {torch_version}; {len(samples)} submissions "
          f"({', '.join(args.kinds)}) of {len({e for _, e, _ in samples})} exercises")
    rows = []
    try:
        for workers in args.workers:
            nbg_wall, grades = bench_nbgrader(venv, samples, workers, work, env)
            nbg_rate = 60 * len(samples) / nbg_wall
            print(f"workers={workers}: nbgrader {len(samples)} in {nbg_wall:6.1f} s = {nbg_rate:5.1f}/min "
                  f"({len(grades)} graded)", flush=True)
            store = work / f"store-{workers}"    # empty: the first run of this course version warms up
            for label in ("first run", "later run"):
                try:
                    ours_wall, report = bench_ours(samples, workers, work, store, label.split()[0])
                except Exception as exc:  # noqa: BLE001 - print the other figures anyway
                    print(f"  ours, {label}: FAILED: {exc}")
                    continue
                ours_rate = 60 * len(samples) / ours_wall
                rows.append((workers, label, ours_rate / nbg_rate))
                warm = ("reused from the first run" if report.cache_reused
                        else "graded the model answers")
                print(f"  ours, {label}: {ours_wall:6.1f} s = {ours_rate:5.1f}/min (warm-up {report.warm_s:.1f} s, "
                      f"{warm}; {len(report.graded)} graded, {len(report.faults)} grader faults) | "
                      f"ours / nbgrader = {ours_rate / nbg_rate:.2f}", flush=True)
                for fault in report.faults:
                    print(f"  our grader fault: {fault}")
        print("\nratio ours / nbgrader (submissions per minute):")
        for workers, label, ratio in rows:
            print(f"  {workers} worker(s), {label}: {ratio:.2f}x")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
