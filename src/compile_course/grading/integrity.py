"""Match a submission's cells to the instructor's source by id and report every change.

Nothing a student wrote in a locked or test cell is used: ``assemble.py``
takes those cells from the source. This module only says what was changed,
so that the instructor (and the student) can see it. Changes to graded tests
and to provided code are flags (the attempt scores 0); changes to locked
markdown and to the student's own cells are notices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .source import ExerciseSource


@dataclass(frozen=True)
class Finding:
    severity: str    # "flag" (the attempt scores 0) or "notice"
    cell_id: str
    text: str


@dataclass
class SubCell:
    position: int
    course_id: str | None    # the source id this cell maps to, None when it maps to none
    cell_type: str
    source: str
    claimed_kind: str | None = None


@dataclass
class Matched:
    cells: list[SubCell]
    findings: list[Finding] = field(default_factory=list)
    reject: str = ""         # non-empty: the notebook is not this exercise at all

    @property
    def flags(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "flag"]

    @property
    def notices(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "notice"]

    def copies(self, course_id: str) -> list[SubCell]:
        return [c for c in self.cells if c.course_id == course_id]


def normalized(text: str) -> str:
    """Source text compared modulo trailing spaces, line endings and blank edges."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").strip("\n").split("\n")).strip("\n")


def match_cells(source: ExerciseSource, nb: dict) -> Matched:
    known = source.by_id()
    cells = []
    for position, cell in enumerate(nb.get("cells", [])):
        meta = cell.get("metadata", {}).get("course")
        meta = meta if isinstance(meta, dict) else {}
        cid = meta.get("id") if isinstance(meta.get("id"), str) else None
        if cid is None and isinstance(cell.get("id"), str) and cell["id"] in known:
            cid = cell["id"]
        claimed = meta.get("kind") if isinstance(meta.get("kind"), str) else None
        cells.append(SubCell(position, cid if cid in known else None, cell.get("cell_type", ""), cell.get("source", ""), claimed))
        if cid is not None and cid not in known and claimed in ("test", "hidden-test"):
            cells[-1].claimed_kind = "forged"
    matched = Matched(cells)
    if not any(c.course_id for c in cells):
        matched.reject = "none of this exercise's cells were found (wrong notebook, or the cell metadata was stripped)"
        return matched
    add = matched.findings.append
    for c in cells:
        if c.claimed_kind == "forged":
            add(Finding("flag", f"#{c.position + 1}", "a cell the student added claims to be a graded test"))
    for src in source.cells:
        if not src.course_id:
            continue
        copies = matched.copies(src.course_id)
        cid, n = src.course_id, len(copies)
        strict = src.kind in ("test", "hidden-test") or (src.kind == "locked" and src.cell_type == "code")
        what = {"test": "test cell", "hidden-test": "hidden test id", "locked": "locked cell",
                "solution": "solution cell", "answer": "answer cell"}[src.kind]
        if src.kind == "hidden-test":
            if n:
                add(Finding("flag", cid, "the notebook contains a cell with the id of a hidden test"))
            continue
        if src.kind in ("locked", "test"):
            sev = "flag" if strict else "notice"
            if n == 0:
                add(Finding(sev, cid, f"{what} deleted (restored from the instructor's copy)"))
            if n > 1:
                add(Finding(sev, cid, f"{what} duplicated {n} times (run once, from the instructor's copy)"))
            if any(c.cell_type != src.cell_type for c in copies):
                add(Finding(sev, cid, f"{what} changed from {src.cell_type} to "
                                      f"{', '.join(sorted({c.cell_type for c in copies if c.cell_type != src.cell_type}))} (restored)"))
            if any(normalized(c.source) != normalized(src.source) for c in copies):
                add(Finding(sev, cid, f"{what} edited (the instructor's version was run instead)"))
        elif src.kind == "solution":
            code = [c for c in copies if c.cell_type == "code"]
            if n == 0:
                add(Finding("notice", cid, "solution cell missing: graded as unanswered"))
            elif not code:
                add(Finding("notice", cid, "solution cell is no longer a code cell: graded as unanswered"))
            elif len(code) > 1:
                add(Finding("notice", cid, f"solution cell appears {len(code)} times: every copy runs, in order"))
        elif src.kind == "answer":
            if n == 0:
                add(Finding("notice", cid, "answer cell missing: nothing to review"))
            elif n > 1:
                add(Finding("notice", cid, f"answer cell appears {n} times: the copies are joined for review"))
    return matched


def answer_text(matched: Matched, course_id: str) -> str:
    return "\n\n".join(c.source.strip() for c in matched.copies(course_id))
