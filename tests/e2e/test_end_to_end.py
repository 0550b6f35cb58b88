"""End to end with the real sandbox and the real verdict code: ``grade_class`` on a small class.

A submission whose hidden tests fail is graded; then every file the grader wrote (pages, CSVs,
the gradebook and its WAL) is searched for the hidden cells' source and for the messages the
hidden verdicts carried before the platform dropped them.
"""

from __future__ import annotations

import nbformat

from course_grader.pipeline.grade_class import grade_class
from course_grader.pipeline.verdicts import verdict_module
from course_grader.results.gradebook import Gradebook

WEAK_FIXTURE = ("def check_equivalent(reference, candidate):\n"
                "    x = torch.tensor([[0.0, -0.0, float('nan'), 1.0], [-1.0, 2.0, float('inf'), -2.0],"
                " [0.5, -3.0, 0.0, 2.0], [1.5, -0.5, 3.0, -2.0]])\n"
                "    modes = ('train', 'eval') if isinstance(reference, nn.Module) else (None,)\n"
                "    return compare(reference, candidate, [Case(str(m), (x,), mode=m, grad=True) for m in modes]).ok\n")


def test_a_small_class_graded_for_real_leaks_no_hidden_test(tmp_path, submission, exercises):
    ex = exercises["ex04"]

    def weak(nb):
        for cell in nb.cells:
            if cell.metadata.get("course", {}).get("id") == "ex04-fixture":
                cell.source = WEAK_FIXTURE

    def scratch_crash(nb):
        nb.cells.append(nbformat.v4.new_code_cell("import os\nos._exit(3)"))

    submission("model", "ex04")
    submission("weak", "ex04", edit=weak)
    submission("blank", "ex04", answered=False)
    submission("crashy", "ex04", edit=scratch_crash)
    seen: list = []

    def recording(exercise):
        grade, harness = verdict_module(exercise)

        def wrapped(ctx):
            out = grade(ctx)
            seen.extend(out)
            return out

        return wrapped, harness

    report = grade_class(tmp_path / "subs", tmp_path / "out", jobs=2, progress=False, verdict_for=recording)
    assert report.ok, report.faults
    with Gradebook(report.gradebook) as book:
        rows = {r["student"]: r for r in book.current()}
        hidden_ids = {c.course_id for c in ex.hidden_tests}
        weak_tests = {t["test_id"]: t["status"] for t in book.tests(rows["weak"]["key"])}
    assert rows["model"]["auto_score"] == ex.auto_points
    assert rows["crashy"]["auto_score"] == ex.auto_points           # a dead feedback kernel costs nothing
    assert rows["blank"]["auto_score"] == 0
    assert {k for k, v in weak_tests.items() if v == "failed"} == hidden_ids

    written = b"".join(p.read_bytes() for p in sorted((tmp_path / "out").rglob("*")) if p.is_file())
    text = written.decode("utf-8", "replace")
    for cell in ex.hidden_tests:
        for line in cell.source.splitlines():
            if len(line.strip()) > 20:
                assert line.strip() not in text, line
    hidden_messages = {v.message for v in seen if v.test_id in hidden_ids and v.message}
    assert hidden_messages, "the weak fixture's hidden verdicts should explain themselves (to the platform)"
    for message in hidden_messages:
        assert message not in text
    index = (tmp_path / "out" / "feedback" / "index.html").read_text()
    assert all(f">{s}</td>" in index for s in ("model", "weak", "blank", "crashy"))
