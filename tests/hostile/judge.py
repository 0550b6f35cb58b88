"""The hostile corpus's class folder and its checks, shared by the root and the ordinary-user tests.

``make_class(dest)`` puts the kept submissions (``submissions/``, see ``corpus.py``) in a class folder and adds
the file-system cases git cannot keep; ``Verdicts`` reads a graded folder's gradebook and outputs and says,
case by case, where they differ from ``expected.json``.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))
if str(ROOT / "tests") not in sys.path:
    sys.path.append(str(ROOT / "tests"))

from corpus import FILE_SYSTEM_CASES, SUBMISSIONS, UNREADABLE_CASE  # noqa: E402

# a spreadsheet runs a cell that begins with one of these as a formula
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# what a student's HTML would do on a page if it were not escaped
LIVE_HTML = re.compile(r"<script>alert|onerror=alert|<img src=x", re.I)


def expected_verdicts(unreadable: bool = False) -> dict[str, dict]:
    expected = json.loads((SUBMISSIONS / "expected.json").read_text(encoding="utf-8"))
    expected.update({name: want for name, (_, want) in FILE_SYSTEM_CASES.items()})
    if unreadable:
        expected[UNREADABLE_CASE[0]] = UNREADABLE_CASE[1]
    return expected


def make_class(dest: Path, unreadable: bool = False) -> dict[str, dict]:
    """The corpus as a class folder at ``dest``; returns the expected verdicts by file name."""
    dest.mkdir(parents=True)
    for path in SUBMISSIONS.glob("*.ipynb"):
        shutil.copyfile(path, dest / path.name)
    honest = SUBMISSIONS / "honest-renamed-helpers__ex01_capture_boundary.ipynb"
    for name, (what, _) in FILE_SYSTEM_CASES.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if what == "symlink":
            target.symlink_to(ROOT / "solutions" / "ex01_capture_boundary.ipynb")
        elif what == "fifo":
            os.mkfifo(target)
        elif what == "folder":
            target.mkdir()
        else:
            shutil.copyfile(honest, target)
    if unreadable:
        target = dest / UNREADABLE_CASE[0]
        shutil.copyfile(SUBMISSIONS / "honest-fixture-keywords__ex04_comparison_fixture.ipynb", target)
        target.chmod(0)
    return expected_verdicts(unreadable)


class Verdicts:
    """A graded corpus: its gradebook rows by file name, and what ``course grade`` printed."""

    def __init__(self, out: Path, printed: str):
        self.out, self.printed = out, printed
        with sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True) as db:
            db.row_factory = sqlite3.Row
            self.rows = {Path(r["path"]).name: dict(r) for r in db.execute(
                "SELECT a.* FROM attempts a JOIN current c ON a.key = c.key")}

    def problem(self, name: str, want: dict) -> str:
        """Why the case's verdict is not the expected one ("" when it is)."""
        if want["status"] == "listed":
            short = Path(name).name
            if short in self.rows:
                return f"graded as {self.rows[short]['student']!r}; it should only be listed as not graded"
            unattributed = self.out / "unattributed.txt"
            listed = self.printed + (unattributed.read_text(encoding="utf-8", errors="replace")
                                     if unattributed.exists() else "")
            shown = name.split("/")[0].split("\n")[0].split("__")[0]
            return "" if shown in listed else "not graded, and nowhere said so"
        row = self.rows.get(Path(name).name)
        if row is None:
            return "not graded"
        if row["status"] != want["status"]:
            return f"status {row['status']} (expected {want['status']}): {row['reason'][:200]}"
        if "points" in want and row["auto_score"] != want["points"]:
            return f"{row['auto_score']:g}/{row['auto_possible']:g} points (fair: {want['points']:g})"
        said = " ".join((row["reason"], row["notes"], row["notices"]))
        if want.get("reason") and not re.search(want["reason"], said, re.I):
            return f"reason, notes and notices ({said[:200]!r}) do not say {want['reason']!r}"
        return ""

    def formulas(self) -> list[str]:
        """Cells of the CSV files a spreadsheet would run as formulas."""
        found = []
        csv.field_size_limit(sys.maxsize)   # a long written answer is one long field
        for sheet in self.out.glob("*.csv"):
            with sheet.open(encoding="utf-8-sig", newline="") as fh:
                for row in csv.reader(fh):
                    found += [f"{sheet.name}: {cell[:40]!r}" for cell in row if cell.startswith(FORMULA_START)
                              and not re.fullmatch(r"-?\d+(\.\d+)?", cell)]
        return found

    def live_html(self) -> list[str]:
        """Pages where a student's HTML is live."""
        return [str(page.relative_to(self.out)) for page in (self.out / "feedback").rglob("*.html")
                if LIVE_HTML.search(page.read_text(encoding="utf-8"))]


def grader_traceback(printed: str) -> bool:
    """Whether ``course grade`` printed a traceback of its own: one at the start of a line, as Python prints
    it (a student's text only ever appears inside the summary table's cells or quoted in a reason)."""
    return bool(re.search(r'^Traceback \(most recent call last\):\n  File "', printed, re.M))


def undeserved(verdicts: Verdicts, expected: dict[str, dict]) -> list[str]:
    """Every case graded above its fair score (closed or open), for the summary line of a failure."""
    out = []
    for name, want in expected.items():
        row = verdicts.rows.get(Path(name).name)
        if row and "points" in want and row["auto_score"] > want["points"]:
            out.append(f"{name}: {row['auto_score']:g} > {want['points']:g}")
    return out
