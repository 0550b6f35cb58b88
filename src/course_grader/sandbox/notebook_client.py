"""The notebook-kernel client: ``NotebookKernel``, a fresh sandboxed IPython kernel run cell by cell."""

from __future__ import annotations

import time
from dataclasses import dataclass

from course_grader.errors import SandboxFault
from course_grader.sandbox.limits import Limits
from course_grader.sandbox.run import Run, RunHost
from course_grader.status import CellStatus, FaultKind
from course_grader.wire.protocol import CellReply, RunCell, RunMode


@dataclass
class CellResult:
    """One notebook cell's outcome."""

    status: CellStatus
    output: str
    error: str | None
    cpu_s: float
    fault: FaultKind | None = None        # set when a limit or a crash ended the kernel in this cell


class NotebookKernel:
    """A fresh sandboxed IPython kernel; cells run one at a time with ``run_cell``."""

    def __init__(self, host: RunHost, limits: Limits | None = None):
        self.host, self.limits = host, limits or host.limits
        self.run: Run | None = None
        self.fault: SandboxFault | None = None      # what ended the kernel, if a cell did
        self.cells_run = 0
        self.started = time.monotonic()

    def __enter__(self) -> NotebookKernel:
        self.run = Run(self.host, RunMode.NOTEBOOK, self.limits.cpu_s_total, reveal={}, limits=self.limits)
        return self

    def __exit__(self, *exc) -> None:
        if self.run:
            self.run.close()

    @property
    def notices(self) -> list[str]:
        return (self.run.notices if self.run else []) + self.host.notices

    def run_cell(self, source: str, cell_id: str = "") -> CellResult:
        """Run one cell. A student-caused end (limit, crash) is returned as data with ``fault`` set;
        later cells then come back ``NOT_RUN``. Only a grader failure raises ``SandboxFault``."""
        where = f"cell {cell_id}" if cell_id else f"cell {self.cells_run + 1}"
        self.cells_run += 1
        if self.fault is not None or self.run is None:
            return CellResult(CellStatus.NOT_RUN, "", "an earlier cell ended the kernel", 0.0)
        request = RunCell(cell_id=cell_id, source=source, cpu_s=self.limits.cpu_s_per_cell,
                          output_bytes=self.limits.output_bytes)
        cpu0 = self.run.cpu_used()
        left = self.limits.wall_s_per_run - (time.monotonic() - self.started)
        try:
            if left <= 0:
                raise SandboxFault(FaultKind.WALL_TIME, f"the whole run passed its {self.limits.wall_s_per_run:.0f} s "
                                   f"(wall clock) before {where}")
            reply: CellReply = self.run.request(
                request, CellReply, self.limits.cpu_s_per_cell, self.limits.wall_s_backstop, where, hard_s=left,
                hard_why=f"the whole run reached its {self.limits.wall_s_per_run:.0f} s")
        except SandboxFault as fault:
            if not fault.kind.student_fault:
                raise
            self.fault = fault
            cpu1 = self.run.cpu_used()
            used = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else 0.0
            status = CellStatus.TIMEOUT if fault.kind in (FaultKind.CPU_TIME, FaultKind.WALL_TIME) else CellStatus.DIED
            output = bytes(self.run.raw_pending).decode("utf-8", "replace")
            self.run.close()
            return CellResult(status, output, fault.detail, round(used, 3), fault.kind)
        if reply.status not in (CellStatus.OK, CellStatus.ERROR):
            self.fault = SandboxFault(FaultKind.PROTOCOL, f"an unknown cell status in {where}")
            self.run.close()
            return CellResult(CellStatus.DIED, "", self.fault.detail, 0.0, FaultKind.PROTOCOL)
        output = reply.output
        if self.run.raw_pending:
            output += bytes(self.run.raw_pending).decode("utf-8", "replace")
        if reply.dropped_bytes:
            output = output[: self.limits.output_bytes] + f"\n[output truncated: {reply.dropped_bytes} more bytes]"
        return CellResult(CellStatus(reply.status), output[: self.limits.output_bytes + 200], reply.error,
                          float(reply.cpu_s))
