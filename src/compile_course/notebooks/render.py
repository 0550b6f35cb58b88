"""Render executed notebooks to HTML with an index page in lesson order."""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter


def notebook_title(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def render_html(notebooks: list[Path], out_dir: Path, heading: str) -> Path:
    """Write one HTML page per notebook plus ``index.html``; return the index path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(template_name="lab")
    links = []
    for path in sorted(notebooks):
        nb = nbformat.read(path, as_version=4)
        body, _ = exporter.from_notebook_node(nb)
        page = out_dir / (path.stem + ".html")
        page.write_text(body, encoding="utf-8")
        links.append(f'<li><a href="{page.name}">{html.escape(notebook_title(nb, path.stem))}</a>'
                     f' <small>({html.escape(path.name)})</small></li>')
    index = out_dir / "index.html"
    index.write_text(
        "<!doctype html><meta charset='utf-8'><title>{0}</title>"
        "<body style='font-family:sans-serif;max-width:46em;margin:2em auto'>"
        "<h1>{0}</h1><ol>{1}</ol></body>".format(html.escape(heading), "\n".join(links)),
        encoding="utf-8",
    )
    return index
