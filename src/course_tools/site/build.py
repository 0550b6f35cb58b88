"""Build the course site: Sphinx + myst-nb over the stored notebooks, plus the tlparse report.

``build_site(out)`` stages ``site/*.md``, ``notebooks/*.ipynb``,
``exercises/*.ipynb`` and the student guide ``docs/students.md`` into one source folder (the layout of the checkout, so
the notebooks' relative links resolve), runs Sphinx with ``site/conf.py``,
and publishes tlparse's report at ``out/tlparse/index.html``. Stored outputs
are rendered as they are; no notebook is executed (``nb_execution_mode =
"off"``). What it does not do: check links in a browser (tests/course_tools/test_site.py
does) or refresh stored outputs (``course execute`` does).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from compile_course.paths import BUILD, EXERCISES, NOTEBOOKS, ROOT

SITE_SOURCE = ROOT / "site"  # conf.py and the hand-written pages
STAGED_FOLDERS = {"notebooks": NOTEBOOKS, "exercises": EXERCISES}
STAGED_DOCS = ("students.md",)  # docs/ pages for students; the instructor docs stay out of the course site
REPORT_FOLDER = "tlparse"  # the report's place in the site: tlparse/index.html


def stage_sources(stage: Path) -> None:
    """Copy the pages and notebooks into ``stage``; ``copy2`` keeps mtimes so Sphinx rebuilds only what changed."""
    stage.mkdir(parents=True, exist_ok=True)
    for page in SITE_SOURCE.glob("*.md"):
        shutil.copy2(page, stage / page.name)
    for name, folder in STAGED_FOLDERS.items():
        target = stage / name
        shutil.rmtree(target, ignore_errors=True)  # a notebook removed from the course leaves the site too
        target.mkdir()
        for notebook in sorted(folder.glob("*.ipynb")):
            shutil.copy2(notebook, target / notebook.name)
    # the student guide, where the lessons' links expect it (../docs/students.md)
    (stage / "docs").mkdir(exist_ok=True)
    for page in STAGED_DOCS:
        shutil.copy2(ROOT / "docs" / page, stage / "docs" / page)
    # the tlparse page shows the traced function from its real source
    shutil.copy2(Path(__file__).with_name("traced_lesson.py"), stage / "traced_lesson.py")


def run_sphinx(stage: Path, html: Path, *, strict: bool = False) -> int:
    """Sphinx's own build, with its own progress lines; returns its exit status."""
    from sphinx.cmd.build import build_main

    argv = ["-b", "html", "-c", str(SITE_SOURCE), "-d", str(html.parent / "doctrees")]
    if strict:
        argv += ["-W", "--keep-going"]  # a warning (a dead cross-reference, say) fails the build
    return build_main([*argv, str(stage), str(html)])


_LOADED_URL = re.compile(  # a tag that makes the browser fetch an absolute or protocol-relative URL
    r"<(?:script|img|iframe|source|link)\b[^>]*?\b(?:src|href)=[\"'](https?:)?//[^\"']*", re.IGNORECASE)


def remote_assets(site: Path) -> list[str]:
    """``page: tag`` for every script, stylesheet, image or frame a page would load from the network."""
    found = []
    for page in sorted(site.rglob("*.html")):
        for match in _LOADED_URL.finditer(page.read_text(encoding="utf-8", errors="replace")):
            found.append(f"{page.relative_to(site)}: {match.group(0)}")
    return found


def stage_folder(out: Path) -> Path:
    """Where ``build_site(out)`` stages its sources: beside ``out``, hidden."""
    return out.with_name(f".{out.name}-source")


def build_site(out: Path = BUILD / "site", *, report: bool = True, strict: bool = False) -> Path:
    """Build the whole site into ``out``; return ``out/index.html``. Raises if a step fails."""
    # Sphinx works in a stage beside ``out`` (myst-nb writes its image folder next to
    # Sphinx's output folder, so that must not be build/ itself); the finished pages are copied to ``out``.
    stage = stage_folder(out)
    html = stage / "_build" / "html"
    stage_sources(stage)
    status = run_sphinx(stage, html, strict=strict)
    if status:
        raise RuntimeError(f"sphinx-build exited with {status}")
    kept_report = stage / "_build" / REPORT_FOLDER
    shutil.rmtree(kept_report, ignore_errors=True)
    if not report and (out / REPORT_FOLDER).is_dir():  # --no-report keeps the last report, so its link still works
        shutil.move(out / REPORT_FOLDER, kept_report)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(html, out, ignore=shutil.ignore_patterns(".buildinfo"))
    if kept_report.is_dir():
        shutil.move(kept_report, out / REPORT_FOLDER)
    if report:
        from .tlparse_report import write_report

        print("tlparse report: running notebook 04's branch_on_values under TORCH_TRACE, then tlparse", flush=True)
        write_report(out / REPORT_FOLDER)
    remote = remote_assets(out)
    if remote:  # the site must work offline; say which page would fetch what
        raise RuntimeError("pages load from the network:\n  " + "\n  ".join(remote))
    return out / "index.html"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m course_tools.site.build", description=__doc__.splitlines()[0],
                                     allow_abbrev=False)
    parser.add_argument("--out", type=Path, default=BUILD / "site", help="output folder (default build/site)")
    parser.add_argument("--no-report", action="store_true",
                        help="skip the TORCH_TRACE + tlparse step (keeps the last report, if any)")
    parser.add_argument("--strict", action="store_true", help="fail on any Sphinx warning")
    args = parser.parse_args(argv)
    index = build_site(args.out.resolve(), report=not args.no_report, strict=args.strict)
    print(f"site: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
