"""The feedback run (pipeline.feedback_run): each cell as it ran, a note per student error or limit, worded by
``FaultKind``; a cell that ended the kernel stops the run; nothing here is a score."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from course_grader.errors import SandboxFault
from course_grader.intake.cells import Checked, RunCell
from course_grader.pipeline.feedback_run import FeedbackRun, feedback_run
from course_grader.sandbox import CellResult
from course_grader.status import CellRole, CellStatus, FaultKind

SETUP = RunCell('course cell "import torch"', "import torch", CellRole.LOCKED, "ex01-setup")
ANSWER = RunCell('your answer "def f(x): ..."', "def f(x): ...", CellRole.SOLUTION, "ex01-rewrite")
MINE = RunCell('your cell "f(1)"', "f(1)", CellRole.STUDENT, "#5")


class ScriptedHost:
    """A host whose notebook kernel answers each cell, by its source, with a given ``CellResult``."""

    def __init__(self, results: dict[str, CellResult]):
        self.results, self.ran = results, []

    @contextmanager
    def notebook_kernel(self):
        yield self

    def run_cell(self, source: str, cell_id: str = "") -> CellResult:
        self.ran.append(cell_id)
        return self.results.get(source, CellResult(CellStatus.OK, "", None, 0.5))


def test_every_cell_is_recorded_and_only_the_students_errors_and_cpu_count():
    raised = "NameError: name 'g' is not defined\n  at ..."
    host = ScriptedHost({"import torch": CellResult(CellStatus.ERROR, "", "ImportError: no torch", 2.0),
                         "f(1)": CellResult(CellStatus.ERROR, "1\n", raised, 1.0)})
    run = feedback_run(host, Checked(run_cells=[SETUP, ANSWER, MINE]))
    assert isinstance(run, FeedbackRun)
    assert [(c.status, c.output) for c in run.cells] == [(CellStatus.ERROR, ""), (CellStatus.OK, ""),
                                                         (CellStatus.ERROR, "1\n")]
    assert run.notes == ["your cell \"f(1)\" raised NameError: name 'g' is not defined"]   # the locked cell's is not
    assert run.student_cpu_s == 1.5


@pytest.mark.parametrize("result, worded", [
    (CellResult(CellStatus.DIED, "", "the kernel used 2 GB", 0.1, FaultKind.MEMORY), FaultKind.MEMORY.wording),
    (CellResult(CellStatus.TIMEOUT, "", "", 9.0, FaultKind.WALL_TIME), FaultKind.WALL_TIME.wording),
    (CellResult(CellStatus.TIMEOUT, "", "", 9.0), FaultKind.CPU_TIME.wording),     # a host that names no fault
    (CellResult(CellStatus.DIED, "", "", 0.0), FaultKind.CRASHED.wording),
])
def test_a_cell_that_ends_the_kernel_is_worded_by_its_fault_kind_and_stops_the_run(result, worded):
    host = ScriptedHost({"def f(x): ...": result})
    run = feedback_run(host, Checked(run_cells=[SETUP, ANSWER, MINE]))
    stopped = f"{ANSWER.label} {worded}"
    assert run.notes == [stopped + (f": {result.error}" if result.error else "")]
    assert host.ran == ["ex01-setup", "ex01-rewrite"]
    assert (run.cells[-1].status, run.cells[-1].error) == (CellStatus.NOT_RUN, f"not run: {stopped}")


def test_a_grader_failure_is_a_note_that_never_touches_the_score():
    class Broken(ScriptedHost):
        @contextmanager
        def notebook_kernel(self):
            raise SandboxFault(FaultKind.GRADER, "no fork server")
            yield

    run = feedback_run(Broken({}), Checked(run_cells=[ANSWER]))
    assert run.cells == [] and run.notes == ["the feedback run could not be completed (grader: no fork server); "
                                             "it never affects your score"]


def test_nothing_to_run_starts_no_kernel():
    class NoKernel:
        def notebook_kernel(self):
            raise AssertionError("no kernel for an empty run")

    assert feedback_run(NoKernel(), Checked()) == FeedbackRun()
