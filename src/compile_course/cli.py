"""``course``: the course's command line.

  course run                  the main job: execute lessons, render HTML, release exercises, grade samples
  course execute NB...        re-execute notebooks and store their normalized outputs in place
  course render               render executed notebooks to HTML
  course release [--check]    regenerate exercises/ from solutions/
  course grade DIR [...]      grade a folder of student submissions
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .paths import BUILD, NOTEBOOKS, ROOT


def _lessons() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _execute_many(paths: list[Path], out_dir: Path | None, jobs: int) -> list[tuple[Path, float | None, str]]:
    """Execute notebooks (``jobs`` at a time); ``out_dir=None`` stores in place."""
    from .notebooks.execute import execute_notebook

    def one(path: Path):
        target = (out_dir / path.name) if out_dir else path
        try:
            _, seconds = execute_notebook(path, target)
            return path, seconds, "ok"
        except Exception as exc:  # report and go on: one broken notebook must not hide the others
            return path, None, f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, paths))
    for path, seconds, status in results:
        took = f"{seconds:6.1f} s" if seconds is not None else "      -"
        print(f"  {os.path.relpath(path, ROOT)}  {took}  {status}")
    return results


def cmd_execute(args) -> int:
    paths = [Path(p).resolve() for p in args.notebooks]
    results = _execute_many(paths, None, args.jobs)
    return 0 if all(s == "ok" for _, _, s in results) else 1


def cmd_render(args) -> int:
    from .notebooks.render import render_html

    executed = sorted((BUILD / "executed").glob("*.ipynb")) or _lessons()
    index = render_html(executed, BUILD / "html", "torch.compile: compilation and graph-break contracts")
    print(f"HTML: {index.relative_to(ROOT)}")
    return 0


def cmd_run(args) -> int:
    """Main job. Stored outputs in notebooks/ are left alone; results go to build/."""
    from .notebooks.render import render_html

    summary: list[str] = []
    lessons = _lessons()
    print(f"[1/4] executing {len(lessons)} lesson notebooks into build/executed/")
    results = _execute_many(lessons, BUILD / "executed", args.jobs)
    ok = sum(s == "ok" for _, _, s in results)
    summary.append(f"lessons executed: {ok}/{len(lessons)} ok   -> build/executed/")

    print("[2/4] rendering HTML")
    executed = [BUILD / "executed" / p.name for p, _, s in results if s == "ok"]
    index = render_html(executed, BUILD / "html", "torch.compile: compilation and graph-break contracts")
    summary.append(f"HTML pages: {len(executed)} + index   -> {index.relative_to(ROOT)}")

    failed = ok != len(lessons)
    try:
        from course_grader.release import release_all
    except ImportError:
        summary.append("exercises: release step not available yet")
    else:
        print("[3/4] regenerating exercises/ from solutions/")
        written = release_all(ROOT / "solutions", ROOT / "exercises")
        summary.append(f"exercises regenerated: {len(written)}   -> exercises/")

    try:
        from .grading.samples import grade_samples
    except ImportError:
        summary.append("grading: grader not available yet")
    else:
        print("[4/4] grading the bundled sample submissions")
        line, grader_ok = grade_samples(BUILD / "grading", jobs=args.jobs)
        summary.append(line)
        failed |= not grader_ok

    print("\nSummary")
    for line in summary:
        print(f"  {line}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["release"]:
        from course_grader.release import main as release_main
        return release_main(argv[1:])
    if argv[:1] == ["grade"]:
        from .grading.cli import main as grade_main
        return grade_main(argv[1:])

    parser = argparse.ArgumentParser(prog="course", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="the main job")
    p_run.add_argument("--jobs", type=int, default=2)
    p_run.set_defaults(func=cmd_run)
    p_exec = sub.add_parser("execute", help="re-execute notebooks and store outputs in place")
    p_exec.add_argument("notebooks", nargs="+")
    p_exec.add_argument("--jobs", type=int, default=2)
    p_exec.set_defaults(func=cmd_execute)
    p_render = sub.add_parser("render", help="render executed notebooks to HTML")
    p_render.set_defaults(func=cmd_render)
    sub.add_parser("release", help="regenerate exercises/ from solutions/ (see course release --help)")
    sub.add_parser("grade", help="grade submissions (see course grade --help)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
