"""One HTML feedback page per student and exercise, rendered from the gradebook.

Shows the score, each test's result and message, integrity findings and the
instructor's review of free-text answers. Never shows test code: hidden tests
appear by id and points only, with the message they raised.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from .gradebook import Gradebook

CSS = """body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;text-align:left}
pre{white-space:pre-wrap;margin:0;font-size:.85em}.passed{color:#176f2c}.failed,.not-run{color:#a11}.voided{color:#a60}
.flag{background:#fde8e8;padding:.5em 1em;border-left:4px solid #a11}.notice{background:#fff6dd;padding:.5em 1em;border-left:4px solid #a60}"""


def _list_section(title: str, items: list[str], box: str | None = None, pre: bool = False) -> str:
    """``<h2>title</h2>`` and a bullet list, optionally in a coloured box or as preformatted text."""
    bullets = "".join(f"<li><pre>{escape(i)}</pre></li>" if pre else f"<li>{escape(i)}</li>" for i in items)
    body = f"<ul>{bullets}</ul>"
    return f"<h2>{escape(title)}</h2>" + (f"<div class='{box}'>{body}</div>" if box else body)


def page_path(out_dir: Path, student: str, exercise_name: str) -> Path:
    return Path(out_dir) / "feedback" / student / f"{exercise_name}.html"


def render_attempt(book: Gradebook, row, out_dir: Path) -> Path:
    manual, reviewed = book.manual_score(row["key"])
    total = row["auto_score"] + manual
    possible = row["auto_possible"] + row["manual_possible"]
    parts = [f"<!doctype html><meta charset='utf-8'><title>{escape(row['student'])}: {escape(row['exercise_name'])}</title>",
             f"<style>{CSS}</style><h1>{escape(row['exercise_name'])}</h1>",
             f"<p>Student: <b>{escape(row['student'])}</b> &middot; status: <b>{escape(row['status'])}</b> &middot; "
             f"score: <b>{total:g} / {possible:g}</b> (tests {row['auto_score']:g} / {row['auto_possible']:g}"
             + (f", written answers {manual:g} / {row['manual_possible']:g}{'' if reviewed else ', review pending'}" if row["manual_possible"] else "")
             + ")</p>"]
    if row["reason"]:
        parts.append(f"<p class='{'flag' if row['status'] != 'graded' else 'notice'}'>{escape(row['reason'])}</p>")
    flags, notices, notes = (json.loads(row[k]) for k in ("flags", "notices", "notes"))
    if flags:
        parts.append(_list_section("Why this attempt scores 0", flags, box="flag"))
    if notices:
        parts.append(_list_section("Changes found in your notebook", notices, box="notice"))
    tests = book.tests(row["key"])
    if tests:
        parts.append("<h2>Tests</h2><table><tr><th>test</th><th>points</th><th>result</th><th>message</th></tr>")
        for t in tests:
            name = t["cell_id"] + (" (hidden)" if t["kind"] == "hidden-test" else "")
            text = t["message"] or t["output"].strip()
            parts.append(f"<tr><td>{escape(name)}</td><td>{t['earned']:g} / {t['points']:g}</td>"
                         f"<td class='{escape(t['status'])}'>{escape(t['status'])}</td><td><pre>{escape(text[:6000])}</pre></td></tr>")
        parts.append("</table>")
    if notes:
        parts.append(_list_section("Errors in your own cells", notes, pre=True))
    answers = book.answers(row["key"])
    if answers:
        parts.append("<h2>Written answers</h2><table><tr><th>question</th><th>points</th><th>comment</th></tr>")
        for a in answers:
            score = "pending" if a["score"] is None else f"{a['score']:g}"
            parts.append(f"<tr><td>{escape(a['cell_id'])}</td><td>{score} / {a['points_possible']:g}</td><td>{escape(a['comment'])}</td></tr>")
        parts.append("</table>")
    path = page_path(out_dir, row["student"], row["exercise_name"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def render_all(book: Gradebook, out_dir: Path, exercise: str | None = None) -> list[Path]:
    return [render_attempt(book, row, out_dir) for row in book.current(exercise)]
