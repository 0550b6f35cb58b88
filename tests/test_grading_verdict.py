from compile_course.grading.assemble import RunCell
from compile_course.grading.run import CellRun, RunResult
from compile_course.grading.verdict import decide, runtime_changes

BASE = {"torch.equal": "1", "builtins.AssertionError": "2"}
CELLS = [RunCell(0, "solution s", "def f(): ...", "solution", "s"),
         RunCell(1, "test t1", "assert f()", "test", "t1", points=2),
         RunCell(2, "hidden-test t2", "assert f()", "hidden-test", "t2", points=3)]


def result(*cells, **kw):
    return RunResult(cells=list(cells), baseline=BASE, **kw)


def ok(i, fp=BASE, out="checked"):
    return CellRun(i, "ok", stdout=out, fp_before=dict(fp), fp_after=dict(fp))


def test_points_come_from_status_not_from_printed_text():
    tests, flags, notes = decide(CELLS, result(ok(0), CellRun(1, "error", "AssertionError", "wrong", "✓ passed", BASE, BASE), ok(2)), [])
    assert [(t.status, t.earned) for t in tests] == [("failed", 0), ("passed", 3)]
    assert tests[0].message == "AssertionError: wrong" and flags == []


def test_changed_fingerprint_voids_every_test_and_flags():
    patched = {**BASE, "torch.equal": "999"}
    tests, flags, _ = decide(CELLS, result(ok(0), ok(1, patched), ok(2, patched)), [])
    assert all(t.earned == 0 and t.status == "voided" for t in tests)
    assert len(flags) == 1 and "torch.equal" in flags[0]


def test_rebinding_a_pinned_name_and_missing_fingerprint_are_flags():
    rebound = {**BASE, "notebook name reference": "rebound"}
    _, flags, _ = decide(CELLS, result(ok(0), ok(1, rebound), CellRun(2, "ok", fp_before=None, fp_after=BASE)), [])
    assert any("'reference'" in f for f in flags) and any("no integrity fingerprint" in f for f in flags)


def test_given_flags_and_channel_errors_zero_the_attempt():
    tests, flags, _ = decide(CELLS, result(ok(0), ok(1), ok(2), channel_errors=["forged"]), ["static scan: x"])
    assert sum(t.earned for t in tests) == 0 and len(flags) == 2


def test_a_dead_kernel_fails_the_cell_and_skips_the_rest():
    run = result(CellRun(0, "died"), CellRun(1, "not-run"), CellRun(2, "not-run"), fault="the kernel died in cell solution s (exit code 1)")
    tests, flags, _ = decide(CELLS, run, [])
    assert [t.status for t in tests] == ["not-run", "not-run"] and "kernel died" in tests[0].message and flags == []


def test_student_errors_become_notes():
    _, _, notes = decide(CELLS, result(CellRun(0, "error", "NameError", "x"), ok(1), ok(2)), [])
    assert notes == ["solution s raised NameError: x"]


def test_runtime_changes_lists_each_kind():
    got = dict(runtime_changes(BASE, {"torch.equal": "1", "new": "x"}, "here"))
    assert set(got) == {"new", "builtins.AssertionError"}
