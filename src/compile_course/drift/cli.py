"""``course drift --torch VERSION_OR_WHEEL``: the torch-upgrade report for maintainers.

Builds ``build/drift-venv-<version>`` (torch as given, every other pin as in
requirements.txt), re-executes every notebook of notebooks/ and solutions/
there into ``build/drift/<version>/executed/`` (the stored outputs are not
touched), compares each compared cell with its stored output and writes
``build/drift/report.html`` and ``report.json``, with a table in the terminal.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import nbformat

from ..paths import BUILD, NOTEBOOKS, ROOT, SOLUTIONS
from .compare import BuildFacts, NotebookResult, compare_notebooks
from .environment import build_venv, pinned_torch
from .report import print_table, write_html, write_json

FACTS_CODE = ("import json, torch; print(json.dumps({'version': torch.__version__, "
              "'git_version': torch.version.git_version, 'cuda': torch.version.cuda}))")


def build_facts(python: Path | str) -> BuildFacts:
    out = subprocess.run([str(python), "-c", FACTS_CODE], capture_output=True, text=True, check=True).stdout
    return BuildFacts(**json.loads(out.strip().splitlines()[-1]))


def course_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(SOLUTIONS.glob("ex[0-9][0-9]_*.ipynb"))


def compare_all(paths: list[Path], executed: Path, builds: list[BuildFacts], pin: str | None) -> list[NotebookResult]:
    results = []
    for path in paths:
        name = str(path.relative_to(ROOT))
        rerun_path = executed / path.parent.name / path.name
        stored = nbformat.read(path, as_version=4)
        if not rerun_path.exists():
            results.append(NotebookResult(name, 0, [], error="the re-run wrote no notebook (see the log above)"))
            continue
        results.append(compare_notebooks(name, stored, nbformat.read(rerun_path, as_version=4), builds, pin))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course drift", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch", required=True, help="a torch version (2.13.0) or a path to a torch wheel")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at a time")
    parser.add_argument("--out", type=Path, default=BUILD / "drift", help="where the report goes")
    parser.add_argument("--reuse-run", action="store_true", help="compare the previous run again without executing")
    args = parser.parse_args(argv)

    print(f"[1/4] the drift venv for torch {args.torch}", flush=True)
    venv, label = build_venv(args.torch)
    python = venv / "bin" / "python"
    candidate, reference = build_facts(python), build_facts(sys.executable)
    print(f"  reference: torch {reference.version} (this venv, the stored outputs); candidate: torch {candidate.version}")

    paths = course_notebooks()
    executed = args.out / label / "executed"
    if not args.reuse_run:
        print(f"[2/4] re-executing {len(paths)} notebooks under torch {candidate.version} into "
              f"{executed.relative_to(ROOT) if executed.is_relative_to(ROOT) else executed}", flush=True)
        for folder in sorted({p.parent for p in paths}):
            group = [str(p) for p in paths if p.parent == folder]
            # The exit status is not the verdict here: failures show up as missing or changed cells.
            subprocess.run([str(python), "-m", "compile_course.cli", "execute", "--allow-errors",
                            "--jobs", str(args.jobs), "--out", str(executed / folder.name), *group], cwd=ROOT)
    print("[3/4] comparing with the stored outputs", flush=True)
    results = compare_all(paths, executed, [reference, candidate], pinned_torch())

    print("[4/4] writing the report", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(results, args.out / "report.json", reference.version, candidate.version)
    write_html(results, args.out / "report.html", reference.version, candidate.version)
    print_table(results, reference.version, candidate.version)
    print(f"report: {args.out / 'report.html'} and {args.out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
