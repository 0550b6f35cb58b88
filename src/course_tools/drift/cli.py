"""``course drift --torch VERSION_OR_WHEEL`` / ``--python PATH``: the upgrade report for maintainers.

Builds a second venv: with ``--torch``, ``build/drift-venv-<version>`` (torch as given, every other
pin as in requirements.txt); with ``--python``, a venv made by that interpreter outside the checkout
(``~/.cache/compile-course/drift/venv-python-<version>``: the pinned torch and the whole lock, as the
set-up installs them there; with ``--torch`` too, that torch). It re-executes every notebook of
notebooks/ and solutions/ there into ``build/drift/<label>/executed/`` (``<label>`` is ``2.13.0``,
``python-3.12.1`` or ``python-3.12.1-torch-2.13.0``), and once more in this venv
(the pinned torch on the course's Python) into ``build/drift/reference-<version>/executed/``; the
stored outputs are not touched (the runs use a copy in ``build/drift/source/``,
so edits made meanwhile do not mix in). Each compared cell of the two runs is diffed
(the reference run stands for the stored outputs; where it differs from them,
the report says the stored outputs are out of date). ``--against-stored``
skips the reference run and diffs with the stored outputs, as nbval would.
Writes ``build/drift/report.html`` and ``report.json``, and a table in the terminal.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from compile_course.paths import BUILD, NOTEBOOKS, ROOT, SOLUTIONS

from ..errors import InterpreterRefused
from .compare import BuildFacts, NotebookResult, compare_notebooks
from .environment import build_venv, pinned_torch
from .report import print_table, write_html, write_json

FACTS_CODE = ("import json, platform, torch; print(json.dumps({'version': torch.__version__, "
              "'git_version': torch.version.git_version, 'cuda': torch.version.cuda, "
              "'python': platform.python_version()}))")


def build_facts(python: Path | str) -> BuildFacts:
    out = subprocess.run([str(python), "-c", FACTS_CODE], capture_output=True, text=True, check=True).stdout
    return BuildFacts(**json.loads(out.strip().splitlines()[-1]))


def course_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(SOLUTIONS.glob("ex[0-9][0-9]_*.ipynb"))


def execute_all(python: Path | str, paths: list[Path], out: Path, jobs: int) -> None:
    for folder in sorted({p.parent for p in paths}):
        group = [str(p) for p in paths if p.parent == folder]
        # The exit status is not the verdict here: failures show up as missing or changed cells.
        subprocess.run([str(python), "-m", "course_tools.cli", "execute", "--allow-errors",
                        "--jobs", str(jobs), "--out", str(out / folder.name), *group], cwd=ROOT)


def snapshot(paths: list[Path], folder: Path) -> list[Path]:
    """Copy the notebooks, so that edits made while the runs go on do not mix into the comparison."""
    shutil.rmtree(folder, ignore_errors=True)
    copies = []
    for path in paths:
        copy = folder / path.parent.name / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
        copies.append(copy)
    return copies


def compare_all(copies: list[Path], candidate_dir: Path, reference_dir: Path | None,
                builds: list[BuildFacts], pin: str | None) -> list[NotebookResult]:
    results = []
    for path in copies:
        name = f"{path.parent.name}/{path.name}"
        runs = [d / path.parent.name / path.name for d in (candidate_dir, reference_dir) if d is not None]
        missing = [str(p) for p in runs if not p.exists()]
        if missing:
            results.append(NotebookResult(name, 0, [], error=f"no re-run notebook: {', '.join(missing)}"))
            continue
        stored = nbformat.read(path, as_version=4)
        candidate, *reference = [nbformat.read(p, as_version=4) for p in runs]
        results.append(compare_notebooks(name, stored, candidate, builds, pin,
                                         reference=reference[0] if reference else None))
    return results


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def what_differs(torch: str | None, python: str | None) -> str:
    return " on ".join(part for part in (torch and f"torch {torch}", python and f"Python {python}") if part)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="course drift", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch", help="a torch version (2.13.0) or a path to a torch wheel")
    parser.add_argument("--python", help="another interpreter to run the course on (a path, or a name on PATH: "
                                         "python3.12); checked as the set-up checks it, before pip")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at a time")
    parser.add_argument("--out", type=Path, default=BUILD / "drift", help="where the report goes")
    parser.add_argument("--reuse-run", action="store_true", help="compare the previous runs again without executing")
    parser.add_argument("--against-stored", action="store_true",
                        help="compare with the stored outputs only, without a reference run under the pinned torch")
    args = parser.parse_args(argv)
    if not args.torch and not args.python:
        parser.error("give --torch VERSION_OR_WHEEL, --python INTERPRETER, or both")

    print(f"[1/5] the drift venv for {what_differs(args.torch, args.python)}", flush=True)
    try:
        venv, label = build_venv(args.torch, args.python)
    except InterpreterRefused as refused:
        print(f"course drift: {refused}", file=sys.stderr)
        return 2
    python = venv / "bin" / "python"
    candidate, reference = build_facts(python), build_facts(sys.executable)
    print(f"  reference: {reference.name()} (this venv); candidate: {candidate.name()}")

    source = args.out / "source"
    paths = snapshot(course_notebooks(), source) if not args.reuse_run else \
        [source / p.parent.name / p.name for p in course_notebooks()]
    candidate_dir = args.out / label / "executed"
    reference_dir = None if args.against_stored else args.out / f"reference-{reference.version}" / "executed"
    if not args.reuse_run:
        if reference_dir is not None:
            print(f"[2/5] re-executing {len(paths)} notebooks under {reference.name()} (this venv) into "
                  f"{_shown(reference_dir)} (the reference: same code, same moment)", flush=True)
            execute_all(sys.executable, paths, reference_dir, args.jobs)
        print(f"[3/5] re-executing {len(paths)} notebooks under {candidate.name()} into "
              f"{_shown(candidate_dir)}", flush=True)
        execute_all(python, paths, candidate_dir, args.jobs)
    print("[4/5] comparing" + (" with the stored outputs" if reference_dir is None else
                               " the two runs, and the reference run with the stored outputs"), flush=True)
    results = compare_all(paths, candidate_dir, reference_dir, [reference, candidate], pinned_torch())

    print("[5/5] writing the report", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(results, args.out / "report.json", reference, candidate)
    write_html(results, args.out / "report.html", reference, candidate)
    print_table(results, reference, candidate)
    print(f"report: {args.out / 'report.html'} and {args.out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
