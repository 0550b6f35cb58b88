"""Match a submission's cells to the exercise by course id, restore what is the instructor's, assemble the run.

What the grader uses from a submission is only:

* the source of each ``solution`` cell (by course id; copies joined in order),
* the text of each ``answer`` cell (for the review sheet),
* the student's own extra code cells, which run in the feedback kernel only.

Locked and test cells always come from the exercise, and hidden tests are never
sent to any kernel, so nothing a student writes there can matter. What is
*reported* (a locked or test cell edited, deleted, duplicated; a cell claiming a
test's id) is decided here; what the student's code does to shared objects is
the static scan's (:mod:`course_grader.intake.scan`), whose findings :func:`check`
adds to its own.

Findings are flags (the attempt scores 0 until an instructor clears the flag,
``course grade clear-flag``) or notices (shown, no effect on the score).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course_grader.exercise.model import CellKind, Exercise, restore_command, shown_name, without_lock_note
from course_grader.intake.scan import scan
from course_grader.status import CellRole, Severity


@dataclass(frozen=True)
class Finding:
    severity: Severity
    where: str       # a course id, or "#N" (1-based position in the submission)
    text: str

    def line(self) -> str:
        return f"{self.where}: {self.text}"


@dataclass(frozen=True)
class RunCell:
    """One cell of the notebook the feedback kernel runs."""

    label: str       # as the student sees the cell: 'your cell "x = torch.ones(3)"' (model.shown_name)
    source: str
    role: CellRole
    cell_id: str = ""    # what the sandbox calls it in its messages: the course id, or "#7"


@dataclass
class Checked:
    cells: dict[str, str] = field(default_factory=dict)      # solution cell id -> student source (absent = missing)
    answers: dict[str, str] = field(default_factory=dict)    # answer cell id -> student text
    run_cells: list[RunCell] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    reject: str = ""     # non-empty: this is not a submission of the exercise

    @property
    def flags(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.FLAG]

    @property
    def notices(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.NOTICE]


def normalized(text: str) -> str:
    """Source compared modulo trailing spaces, line endings, blank edges and the release's lock note."""
    text = without_lock_note(text.replace("\r\n", "\n"))
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip("\n")


def cell_digest(cell_type: str, source: str) -> str:
    """SHA-256 of a cell's type and :func:`normalized` source: how the release record remembers a version.

    A lone surrogate (``\\udc80``, which JSON can hold) is hashed as it stands, so a cell holding one is
    matched, and reported, like any other edit."""
    import hashlib

    return hashlib.sha256(f"{cell_type}\n{normalized(source)}".encode("utf-8", "surrogatepass")).hexdigest()


def _released_before(ex: Exercise, cid: str, cell: _SubCell) -> bool:
    """The cell equals a version of ``cid`` that an earlier release published (the release record's)."""
    versions = getattr(ex.record, "versions", None) or {}
    return cell_digest(cell.cell_type, cell.source) in versions.get(cid, ())


def _added_later(ex: Exercise, cid: str) -> bool:
    """``cid`` was not in the exercise's first release: a copy from before it never had the cell."""
    added = getattr(ex.record, "added_in", None) or {}
    return added.get(cid, 1) > 1


@dataclass
class _SubCell:
    position: int
    course_id: str | None
    cell_type: str
    source: str


def _sub_cells(ex: Exercise, nb: dict) -> tuple[list[_SubCell], list[Finding]]:
    known = ex.by_id()
    cells, findings = [], []
    for position, cell in enumerate(nb.get("cells", [])):
        meta = cell.get("metadata", {}).get("course")
        meta = meta if isinstance(meta, dict) else {}
        cid = meta.get("id") if isinstance(meta.get("id"), str) else None
        if cid is None and isinstance(cell.get("id"), str) and cell["id"] in known:
            cid = cell["id"]
        claimed = meta.get("kind") if isinstance(meta.get("kind"), str) else None
        if cid is not None and cid not in known and claimed in (CellKind.TEST, CellKind.HIDDEN_TEST):
            findings.append(Finding(Severity.FLAG, f"#{position + 1}",
                                    "a cell the student added claims to be a graded test"))
        cells.append(_SubCell(position, cid if cid in known else None, cell.get("cell_type", ""),
                              cell.get("source", "")))
    return cells, findings


def check(ex: Exercise, nb: dict) -> Checked:
    """Match ``nb`` (a parsed, validated notebook) against ``ex``; scan the student's code."""
    cells, findings = _sub_cells(ex, nb)
    out = Checked(findings=findings)
    if not any(c.course_id for c in cells):
        out.reject = "none of this exercise's cells were found (wrong notebook, or the cell metadata was stripped)"
        return out
    add = out.findings.append

    def copies(cid: str) -> list[_SubCell]:
        return [c for c in cells if c.course_id == cid]

    for src in ex.cells:
        if not src.course_id:
            continue
        cid, mine = src.course_id, copies(src.course_id)
        n = len(mine)
        if src.kind is CellKind.HIDDEN_TEST:
            if n:
                add(Finding(Severity.FLAG, cid, "the notebook contains a cell with the id of a hidden test"))
        elif src.kind in (CellKind.LOCKED, CellKind.TEST):
            strict = src.kind is CellKind.TEST or src.cell_type == "code"
            sev = Severity.FLAG if strict else Severity.NOTICE
            what = "test cell" if src.kind is CellKind.TEST else "locked cell"
            back = f"`{restore_command(ex.name + '.ipynb', cid)}` puts it back"
            if n == 0 and _added_later(ex, cid):
                add(Finding(Severity.NOTICE, cid, f"{what} missing: it came in a later release (restored)"))
            elif n == 0:
                add(Finding(sev, cid, f"{what} deleted (the instructor's copy is used; {back})"))
            if n > 1:
                add(Finding(sev, cid, f"{what} duplicated {n} times (the instructor's copy is used once; {back})"))
            if any(c.cell_type != src.cell_type for c in mine):
                new_types = sorted({c.cell_type for c in mine if c.cell_type != src.cell_type})
                add(Finding(sev, cid, f"{what} changed from {src.cell_type} to {', '.join(new_types)} "
                                      f"(the instructor's copy is used; {back})"))
            changed = [c for c in mine if normalized(c.source) != normalized(src.source)]
            if any(not _released_before(ex, cid, c) for c in changed):
                add(Finding(sev, cid, f"{what} edited (the instructor's version is used instead; {back})"))
            elif changed:   # a copy from an earlier release: the course changed the cell since, not the student
                add(Finding(Severity.NOTICE, cid, f"{what} is an earlier release's version (the current one is used)"))
        elif src.kind is CellKind.SOLUTION:
            code = [c for c in mine if c.cell_type == "code"]
            if n == 0:
                add(Finding(Severity.NOTICE, cid, "solution cell missing: graded as unanswered"))
            elif not code:
                add(Finding(Severity.NOTICE, cid, "solution cell is no longer a code cell: graded as unanswered"))
            elif len(code) > 1:
                add(Finding(Severity.NOTICE, cid,
                            f"solution cell appears {len(code)} times: the copies are read in order"))
            if code:
                out.cells[cid] = "\n\n".join(c.source for c in code)
        elif src.kind is CellKind.ANSWER:
            if n == 0:
                add(Finding(Severity.NOTICE, cid, "answer cell missing: nothing to review"))
            elif n > 1:
                add(Finding(Severity.NOTICE, cid, f"answer cell appears {n} times: the copies are joined for review"))
            out.answers[cid] = "\n\n".join(c.source.strip() for c in mine)
    out.run_cells = assemble(ex, cells)
    for hit in scan(out.run_cells):
        add(Finding(hit.severity, hit.cell, f"static scan: {hit.text}" if hit.severity is Severity.FLAG else hit.text))
    return out


def assemble(ex: Exercise, cells: list[_SubCell]) -> list[RunCell]:
    """The feedback notebook: the instructor's locked code, the student's solution cells, and the
    student's own code cells right after the source cell they followed.

    Test cells are not part of it: their results come from the trusted verdicts (a public test's
    message is on the feedback page), and running them here would only cost time. Hidden tests
    never reach any kernel."""
    first_seen: dict[str, int] = {}
    for c in cells:
        if c.course_id and c.course_id not in first_seen:
            first_seen[c.course_id] = c.position
    followers: dict[str | None, list[_SubCell]] = {}
    anchor = None
    for c in cells:
        if c.course_id and first_seen.get(c.course_id) == c.position:
            anchor = c.course_id
        elif c.course_id is None and c.cell_type == "code" and c.source.strip():
            followers.setdefault(anchor, []).append(c)
    run: list[RunCell] = []

    def add_followers(key) -> None:
        for c in followers.get(key, []):
            run.append(RunCell(f'your cell "{shown_name(c.source)}"', c.source, CellRole.STUDENT, f"#{c.position + 1}"))

    add_followers(None)
    for src in ex.cells:
        if not src.course_id:
            continue
        if src.kind is CellKind.LOCKED and src.cell_type == "code":
            run.append(RunCell(f'course cell "{shown_name(src.source)}"', src.source, CellRole.LOCKED,
                               src.course_id))
        elif src.kind is CellKind.SOLUTION:
            code = [c for c in cells if c.course_id == src.course_id and c.cell_type == "code"]
            for c in code:
                run.append(RunCell(f'your answer "{shown_name(c.source)}"', c.source, CellRole.SOLUTION,
                                   src.course_id))
        add_followers(src.course_id)
    return run

