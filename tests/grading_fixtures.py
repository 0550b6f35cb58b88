"""Fixtures and fakes the grader's tests share (tests/course_grader/** and tests/e2e/).

A plain module, not a conftest: both folders' conftest.py import the fixtures from here, and a test
or a child Python imports the fakes by name (``from grading_fixtures import FakeHost``), which a
module named ``conftest`` cannot promise when several folders have one.

``notebook_file`` writes a small solution-format notebook from a compact cell list;
``exercise`` is ex01's model; ``submission`` builds a student copy of a real
exercise, answered with the model answer or not; ``fake_host`` stands in for the
sandbox's ``GradingHost`` where a test is about the trusted pipeline only.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from course_grader.exercise.model import Exercise, load_exercises
from course_grader.exercise.release import answered_notebook, student_notebook

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"


@pytest.fixture
def notebook_file(tmp_path):
    """``notebook_file(name, [(cell_type, id, kind, source, points), ...], folder=None) -> Path``.

    ``kind=None`` makes a plain cell without ``metadata.course``."""

    def make(name: str, cells, folder: Path | None = None) -> Path:
        out = []
        for n, (cell_type, cid, kind, source, points) in enumerate(cells):
            new = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
            cell = new(source, id=cid or f"plain-{n}")
            if kind is not None:
                cell.metadata["course"] = {"id": cid, "kind": kind}
                if points is not None:
                    cell.metadata["course"]["points"] = points
            out.append(cell)
        folder = Path(folder or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=out), path)
        return path

    return make


@pytest.fixture(scope="session")
def exercises() -> dict[str, Exercise]:
    return load_exercises(SOLUTIONS)


@pytest.fixture(scope="session")
def exercise(exercises) -> Exercise:
    return exercises["ex01"]


def student_copy(ex: Exercise, answered: bool):
    """A submission as a student would hand it in: the released copy, answered with the model answers or not."""
    return answered_notebook(ex) if answered else student_notebook(ex)


@pytest.fixture
def submission(tmp_path, exercises):
    """``submission(student, "ex01", answered=True, edit=None, folder=None) -> Path`` (flat layout)."""

    def make(student: str, exercise_id: str, answered: bool = True, edit=None, folder: Path | None = None) -> Path:
        ex = exercises[exercise_id]
        nb = student_copy(ex, answered)
        if edit is not None:
            edit(nb)
        folder = Path(folder or tmp_path / "subs")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{student}__{ex.name}.ipynb"
        nbformat.write(nb, path)
        return path

    return make


class FakeKernel:
    """Runs nothing: every cell is "ok" with no output (enough for the trusted pipeline's tests)."""

    def __init__(self, log):
        self.log = log

    def run_cell(self, source: str, cell_id: str = ""):
        from course_grader.status import CellStatus

        self.log.append(source)
        return type("CellResult", (), {"status": CellStatus.OK, "output": "", "error": None, "cpu_s": 0.0})()


class FakeHost:
    """A ``GradingHost`` look-alike: ``measure`` answers from a dict of callables."""

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.cells: list[str] = []
        self.measured: list[tuple[str, str, dict]] = []
        self.warm = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @contextmanager
    def notebook_kernel(self):
        yield FakeKernel(self.cells)

    @contextmanager
    def warming(self):
        self.warm = True
        try:
            yield
        finally:
            self.warm = False

    def measure(self, harness: str, entry: str, payload: dict) -> dict:
        self.measured.append((harness, entry, payload))
        return self.answers[(harness, entry)](payload)


@pytest.fixture
def fake_host():
    return FakeHost


HIDDEN_MARK = "HIDDEN-VERDICT-MESSAGE-do-not-show"


def stub_verdicts(ex: Exercise):
    """``verdict_for`` that needs no sandbox: every test passes when the student's solution cells
    no longer raise the release stub; a hidden test that fails carries ``HIDDEN_MARK``."""
    from course_grader.verdict.context import TestVerdict

    def grade(ctx):
        answered = all("NotImplementedError" not in ctx.cells.get(c.course_id, "NotImplementedError")
                       for c in ex.solutions)
        return [TestVerdict(t.course_id, answered, "" if answered else (HIDDEN_MARK if t.hidden else "still the stub"))
                for t in ex.tests]

    return grade, ex.id


@pytest.fixture
def grade_fake():
    """``grade_fake(subs, out, **kw)``: ``grade_class`` with ``FakeHost`` and ``stub_verdicts``."""
    from course_grader.pipeline.grade_class import grade_class

    def run(subs, out, **kw):
        kw.setdefault("host_factory", lambda hide, cache, limits: FakeHost())
        kw.setdefault("verdict_for", stub_verdicts)
        kw.setdefault("progress", False)
        return grade_class(subs, out, **kw)

    return run


@pytest.fixture
def hidden_mark() -> str:
    return HIDDEN_MARK


@pytest.fixture(name="stub_verdicts")
def stub_verdicts_fixture():
    return stub_verdicts
