"""The feedback run: the assembled notebook run once in a sandboxed kernel, for the student's information only.

The notebook (locked code and the student's cells; no test cell, never a hidden test) runs in
``host.notebook_kernel()``. Its outputs and errors go to the student's feedback page; they never
change a score (the verdicts are computed apart, ``pipeline.verdicts``). A cell that used up a
limit stops the run there; the cells after it are shown as not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course_grader.intake.cells import Checked
from course_grader.results.attempt import CellRecord
from course_grader.status import CellRole, CellStatus, FaultKind

CELL_OUTPUT_CHARS = 20_000
MAX_NOTES = 20
NOTE_CHARS = 300
# the fault a cell's end implies when the host names none (the sandbox's kernel always names one)
IMPLIED_FAULT = {CellStatus.TIMEOUT: FaultKind.CPU_TIME, CellStatus.DIED: FaultKind.CRASHED}


def cap(text: str | None, limit: int = CELL_OUTPUT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


@dataclass
class FeedbackRun:
    """What the feedback run shows the student: each cell as it ran, and a note per error or limit."""

    cells: list[CellRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    student_cpu_s: float = 0.0   # CPU time of the student's own cells (the run's timing, never a score)


def feedback_run(host, checked: Checked) -> FeedbackRun:
    """Run the assembled notebook for the student's information."""
    run = FeedbackRun()
    records, notes = run.cells, run.notes
    if not checked.run_cells:
        return run
    from course_grader.errors import SandboxFault

    try:
        with host.notebook_kernel() as kernel:
            stopped = None
            for cell in checked.run_cells:
                if stopped is not None:
                    records.append(CellRecord(cell.label, CellStatus.NOT_RUN, "", f"not run: {stopped}"))
                    continue
                result = kernel.run_cell(cell.source, cell.cell_id)
                status = CellStatus(result.status)
                if CellRole(cell.role).students:
                    run.student_cpu_s += float(result.cpu_s or 0.0)
                records.append(CellRecord(cell.label, status, cap(result.output), cap(result.error)))
                if status is CellStatus.ERROR and CellRole(cell.role).students and len(notes) < MAX_NOTES:
                    error = (result.error or "").strip()
                    first = error.splitlines()[0][:NOTE_CHARS] if error else "an error"
                    notes.append(f"{cell.label} raised {first}")
                elif status in (CellStatus.TIMEOUT, CellStatus.DIED):
                    kind = FaultKind(result.fault or IMPLIED_FAULT[status])
                    error = (result.error or "").strip()
                    notes.append(kind.sentence(error.splitlines()[0] if error else "", who=cell.label))
                    stopped = kind.sentence(who=cell.label)
    except SandboxFault as fault:
        notes.append(f"the feedback run could not be completed ({fault.kind}: {fault.detail[:200]}); "
                     "it never affects your score")
    return run
