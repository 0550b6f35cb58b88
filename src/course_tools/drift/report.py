"""Write the drift report: a table in the terminal, ``report.html`` and ``report.json``.

The HTML page is one self-contained file (inline CSS, no scripts, no CDN), so
it opens offline and can be linked from the lesson as evidence.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from .compare import BuildFacts, ChangeKind, NotebookResult

Build = BuildFacts | str   # a build, or a torch version alone


def _name(build: Build) -> str:
    """``torch 2.14.1+cu130``, or ``torch 2.14.1+cu130 on Python 3.12.1`` when the Python is known."""
    return build.name() if isinstance(build, BuildFacts) else f"torch {build}"

KIND_ORDER = {ChangeKind.BEHAVIOUR: 0, ChangeKind.VERSION_REPORT: 1}


def totals(results: list[NotebookResult]) -> dict:
    changes = [c for r in results for c in r.changes]
    return {
        "notebooks": len(results),
        "compared_cells": sum(r.compared for r in results),
        "changed_cells": len(changes),
        "version_report": sum(c.kind == ChangeKind.VERSION_REPORT for c in changes),
        "behaviour": sum(c.kind == ChangeKind.BEHAVIOUR for c in changes),
        "failed_notebooks": [r.notebook for r in results if r.error],
        "stale_cells": sum(len(r.stale) for r in results),
    }


def headline(summary: dict, reference: Build, candidate: Build) -> str:
    return (f"{_name(candidate)} vs {_name(reference)}: {summary['changed_cells']} of "
            f"{summary['compared_cells']} compared cells changed; {summary['version_report']} only report the "
            f"version, {summary['behaviour']} are behaviour changes"
            + (f"; {len(summary['failed_notebooks'])} notebook(s) could not be compared"
               if summary["failed_notebooks"] else "")
            + (f". Separately, {summary['stale_cells']} stored output(s) differ from the reference run "
               f"({_name(reference)}): "
               "they are out of date (make outputs)" if summary["stale_cells"] else ""))


def _squeeze(line: str) -> str:
    """A changed line without its +/- and its alignment, so that a re-padded table row reads as unchanged."""
    return re.sub(r"([ \-=])\1+", r"\1", line[1:]).strip()


def _changed_lines(diff: str, limit: int = 2, width: int = 200) -> str:
    """The first lines that really changed: re-padded lines (same text, new column widths) are skipped."""
    lines = [ln for ln in diff.splitlines()[2:] if ln[:1] in "+-"]
    removed = {_squeeze(ln) for ln in lines if ln[0] == "-"}
    added = {_squeeze(ln) for ln in lines if ln[0] == "+"}
    telling = [ln for ln in lines if _squeeze(ln) not in (added if ln[0] == "-" else removed)] or lines
    shown = [ln if len(ln) <= width else ln[:width - 3] + "..." for ln in telling[:limit]]
    more = [f"... {len(lines) - len(shown)} more changed line(s)"] if len(lines) > len(shown) else []
    return "\n".join(shown + more)


def _ordered(results: list[NotebookResult]):
    changes = [c for r in results for c in r.changes]
    return sorted(changes, key=lambda c: (KIND_ORDER[c.kind], c.notebook, c.cell))


def print_table(results: list[NotebookResult], reference: Build, candidate: Build) -> None:
    """The changed cells, behaviour changes first; rich sizes the table to the terminal."""
    from rich.table import Table

    from course_grader.ui.terminal import console as terminal_console

    console = terminal_console()
    table = Table(title=f"Compared cells that changed under {_name(candidate)}", title_justify="left")
    table.add_column("kind", no_wrap=True)
    table.add_column("cell", overflow="fold", ratio=1)
    table.add_column("what changed (first lines of the diff)", overflow="fold", ratio=4)
    for change in _ordered(results):
        style = "bold red" if change.kind == ChangeKind.BEHAVIOUR else "dim"
        where = f"{Path(change.notebook).stem} #{change.cell}"
        table.add_row(change.kind.value, where, _changed_lines(change.diff), style=style)
    for r in results:
        if r.error:
            table.add_row("not compared", Path(r.notebook).stem, r.error, style="bold red")
    console.print(table)
    console.print(headline(totals(results), reference, candidate))


def write_json(results: list[NotebookResult], path: Path, reference: Build, candidate: Build) -> None:
    facts = {}
    for role, build in (("reference", reference), ("candidate", candidate)):
        facts[f"{role}_torch"] = build.version if isinstance(build, BuildFacts) else build
        facts[f"{role}_python"] = build.python if isinstance(build, BuildFacts) else ""
    data = {**facts, "reference": _name(reference), "candidate": _name(candidate), "summary": totals(results),
            "notebooks": [r.to_dict() for r in results]}
    path.write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")


CSS = """
body { font-family: system-ui, sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #222 }
table { border-collapse: collapse; width: 100% }
td, th { border: 1px solid #ccc; padding: .3em .5em; vertical-align: top }
th { background: #f3f3f3; text-align: left } .behaviour { background: #fdecea } .version-report { color: #666 }
pre { margin: 0; white-space: pre-wrap; font-size: 85% } .del { color: #a00 } .add { color: #070 }
details { margin: .2em 0 }
"""


def _diff_html(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        css = "add" if line.startswith("+") and not line.startswith("+++") else \
              "del" if line.startswith("-") and not line.startswith("---") else ""
        out.append(f'<span class="{css}">{html.escape(line)}</span>' if css else html.escape(line))
    return "<pre>" + "\n".join(out) + "</pre>"


def write_html(results: list[NotebookResult], path: Path, reference: Build, candidate: Build) -> None:
    summary = totals(results)
    said = headline(summary, reference, candidate)
    reference, candidate = _name(reference), _name(candidate)
    rows = []
    for change in _ordered(results):
        rows.append(
            f'<tr class="{change.kind.value}"><td>{change.kind.value}'
            f"<br><small>{html.escape(change.reason)}</small></td>"
            f"<td>{html.escape(change.notebook)}"
            f"<br><small>cell {change.cell} · id {html.escape(change.cell_id)}</small></td>"
            f"<td><details><summary>cell source</summary><pre>{html.escape(change.source)}</pre></details>"
            f"{_diff_html(change.diff)}</td></tr>")
    for r in results:
        if r.error:
            rows.append(f'<tr class="behaviour"><td>did not run</td><td>{html.escape(r.notebook)}</td>'
                        f"<td><pre>{html.escape(r.error)}</pre></td></tr>")
    per_notebook = "".join(
        f"<tr><td>{html.escape(r.notebook)}</td><td>{r.compared}</td>"
        f"<td>{sum(c.kind == ChangeKind.VERSION_REPORT for c in r.changes)}</td>"
        f"<td>{sum(c.kind == ChangeKind.BEHAVIOUR for c in r.changes)}</td>"
        f"<td>{len(r.stale)}</td><td>{html.escape(r.error)}</td></tr>" for r in results)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Drift report: {html.escape(candidate)}</title>
<style>{CSS}</style></head><body>
<h1>What changes under {html.escape(candidate)}</h1>
<p>{html.escape(said)}.</p>
<p>Every notebook in <code>notebooks/</code> and <code>solutions/</code> was re-executed in a venv with
{html.escape(candidate)} and the course's other pins, and compared the way <code>pytest --nbval</code> compares
them with a re-run under {html.escape(reference)}, the course's own venv (or, with
<code>--against-stored</code>, with the stored outputs). A <em>version-report</em> cell only prints which build ran:
it is tagged
<code>version-report</code>, or its outputs are equal once each build's torch version, commit and CUDA strings and
its Python version are masked,
except for whole lines added or removed that themselves name a build (such as a warning that the outputs were
recorded with another torch). Every other difference is a <em>behaviour</em> change, listed first.</p>
<h2>Per notebook</h2>
<table><tr><th>notebook</th><th>compared cells</th><th>version-report changes</th><th>behaviour changes</th>
<th>stored outputs out of date</th><th>not compared because</th></tr>
{per_notebook}</table>
<h2>Changed cells</h2>
<table><tr><th>kind</th><th>where</th><th>diff (before: {html.escape(reference)}, after:
{html.escape(candidate)}; sanitized as nbval compares)</th></tr>
{"".join(rows) or '<tr><td colspan="3">no compared cell changed</td></tr>'}</table>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
