"""``course check`` and ``course submit`` (course_grader.ui.check, ui.submit): what a student sees before hand-in
is what ``course grade`` says, and the hand-in file is the one ``course grade`` finds.

One test grades a few bundled samples for real (``grade_class``, the real sandbox and verdicts)
and checks each with ``course check``: every public test's status, points and message, the
rejection reason and the flags are the gradebook's, and no hidden test's id shows. The others
use the conftest's test doubles, or need no sandbox at all.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest

from course_grader.exercise.release import answered_notebook, student_notebook
from course_grader.intake.discover import STUDENT_ID_RULE, discover
from course_grader.pipeline.grade_class import grade_class
from course_grader.results.gradebook import Gradebook
from course_grader.samples import make_samples
from course_grader.ui import check as student
from course_grader.ui import submit
from course_tools.cli import main as course_main

SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions"

PICKED = {   # the sample's file name -> (what course check must exit with, what the gradebook must say)
    "correct__ex02_diagnose.ipynb": (0, "graded"),
    "partial__ex02_diagnose.ipynb": (1, "graded"),
    "tamper-edit-test__ex01_capture_boundary.ipynb": (1, "flagged"),
    "bad-invalid-json__ex01_capture_boundary.ipynb": (1, "rejected"),
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("samples")
    return out, make_samples(SOLUTIONS, out)


def snapshot(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, st.st_mode


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


# ---------------------------------------------------------------- course check = course grade, in public


def test_check_reports_what_the_grader_records(samples, tmp_path, capsys, exercises):
    src, expected = samples
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in PICKED:
        shutil.copy(src / name, subs / name)
    report = grade_class(subs, tmp_path / "out", jobs=1, progress=False, warm=False)
    assert report.ok, report.faults
    with Gradebook(report.gradebook) as book:
        rows = {Path(r["path"]).name: r for r in book.current()}
        tests = {name: [dict(t) for t in book.tests(r["key"])] for name, r in rows.items()}

    for name, (exit_code, status) in PICKED.items():
        row = rows[name]
        assert row["status"] == status == expected[name]["status"], (name, row["reason"])
        before = snapshot(subs / name)
        assert student.check_main([str(subs / name)]) == exit_code, name
        out = capsys.readouterr().out
        assert snapshot(subs / name) == before
        public = [t for t in tests[name] if not t["hidden"]]
        for t in public:   # the status, the points and every line of the message, as recorded
            assert f"{t['status'].upper():<7} {t['test_id']}  {t['earned']:g}/{t['points']:g}" in out, (name, out)
            for line in t["message"].splitlines():
                assert line in out, (name, line)
        if public:
            earned = sum(t["earned"] for t in public)
            assert f"public tests: {earned:g}/{sum(t['points'] for t in public):g} points" in out
        ex = exercises[row["exercise"]]
        for cell in ex.hidden_tests:   # how many, and their points; never which or how they went
            assert cell.course_id not in out
        if ex.hidden_tests and status != "rejected":
            assert f"hidden tests: {len(ex.hidden_tests)} ({sum(c.points for c in ex.hidden_tests):g} points)" in out
        if status == "rejected":
            assert f"REJECTED: {row['reason']}" in out
        for flag in json.loads(row["flags"]):
            assert f"FLAG {flag}" in out
    # a partial answer: the answered half's tests passed, the other half's failed, all shown
    partial = {t["test_id"]: t["status"] for t in tests["partial__ex02_diagnose.ipynb"]}
    assert set(partial.values()) == {"failed", "passed"}


def test_check_without_root_runs_unconfined_and_hides_hidden_messages(tmp_path, capsys, monkeypatch, fake_host,
                                                                      stub_verdicts, hidden_mark, exercises):
    """Through the `course` command, with the test doubles: the one line about the unconfined host,
    and a failing hidden test's message (which the stub verdict code writes) never shown."""
    monkeypatch.setattr(student, "is_root", lambda: False)
    hosts = []

    def host_factory(hide, cache, limits):
        hosts.append(hide)
        return fake_host()

    path = write(student_notebook(exercises["ex01"]), tmp_path / "work" / "ex01_capture_boundary.ipynb")
    assert student.check_main([str(path)], host_factory=host_factory, verdict_for=stub_verdicts) == 1
    out = capsys.readouterr().out
    assert out.count("not root: your code runs unconfined") == 1
    assert hidden_mark not in out and "still the stub" in out
    assert not any(c.course_id in out for c in exercises["ex01"].hidden_tests)
    assert "NOT ANSWERED  ex01-rewrite" in out
    assert hosts and all(SOLUTIONS.resolve() in hide for hide in hosts)   # the hidden tests stay out of sight


def test_check_of_a_manually_graded_exercise_needs_no_sandbox(tmp_path, capsys, exercises):
    def no_host(*args):
        raise AssertionError("no sandbox for an exercise without tests")

    ex = exercises["ex06"]
    done = write(answered_notebook(ex), tmp_path / "a" / f"{ex.name}.ipynb")
    blank = write(student_notebook(ex), tmp_path / "b" / f"{ex.name}.ipynb")
    assert student.check_main([str(done)], host_factory=no_host) == 0
    out = capsys.readouterr().out
    assert f"reviewed by a person: {len(ex.answers)} written answer(s), {ex.manual_points:g} points" in out
    assert student.check_main([str(blank)], host_factory=no_host) == 1
    assert "NOT ANSWERED  ex06-a1" in capsys.readouterr().out


def test_check_usage_errors_exit_2(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "ex99_nothing.ipynb").write_text("{}")
    (tmp_path / "diagnose.ipynb").write_text("{}")
    (tmp_path / "ex02_folder.ipynb").mkdir()
    for name, why in (("missing_ex02.ipynb", "no such file"), ("notes.txt", "not a notebook name"),
                      ("ex99_nothing.ipynb", "no exercise ex99"), ("diagnose.ipynb", "does not start with"),
                      ("ex02_folder.ipynb", "a folder")):
        assert course_main(["check", str(tmp_path / name)]) == 2, name
        assert why in capsys.readouterr().err


# ---------------------------------------------------------------- course submit


def test_submit_writes_the_file_the_grader_finds(tmp_path, capsys, exercises, grade_fake):
    source = write(answered_notebook(exercises["ex02"]), tmp_path / "work" / "exercises" / "ex02_diagnose.ipynb")
    before = snapshot(source)
    handin = tmp_path / "handin"
    assert course_main(["submit", str(source), "--student", "ada.L-1_x", "--out", str(handin)]) == 0
    out = capsys.readouterr().out
    target = handin / "ada.L-1_x__ex02_diagnose.ipynb"
    assert f"handed in: {target}" in out and "warning" not in out
    assert target.read_bytes() == source.read_bytes()
    assert snapshot(source) == before
    [cand], problems = discover(handin)
    assert (cand.student, cand.exercise, cand.reason, problems) == ("ada.L-1_x", "ex02", "", [])
    report = grade_fake(handin, tmp_path / "out")           # course grade takes it as it is
    [attempt] = report.graded
    assert (attempt.student, attempt.exercise, attempt.status) == ("ada.L-1_x", "ex02", "graded")
    assert attempt.auto_score == exercises["ex02"].auto_points

    # the same file again: nothing changes; a changed file: replaced, and said so, with warnings
    assert submit.submit_main([str(source), "--student", "ada.L-1_x", "--out", str(handin)]) == 0
    assert "already handed in, unchanged" in capsys.readouterr().out
    write(student_notebook(exercises["ex02"]), source)
    before = snapshot(source)
    assert submit.submit_main([str(source), "--student", "ada.L-1_x", "--out", str(handin)]) == 0
    out = capsys.readouterr().out
    assert "replaced your earlier hand-in" in out
    assert "warning: ex02-breaks: not answered" in out and f"course check {source}" in out
    assert target.read_bytes() == source.read_bytes() and snapshot(source) == before
    assert sorted(p.name for p in handin.iterdir()) == [target.name]   # no temporary file left


@pytest.mark.parametrize("sid", ["", "-ada", "ada lovelace", "élève", "a" * 65, "ada/x", "ada\n", "a__b"])
def test_submit_refuses_a_bad_student_id(sid, tmp_path, capsys, exercises):
    source = write(answered_notebook(exercises["ex02"]), tmp_path / "ex02_diagnose.ipynb")
    before = snapshot(source)
    assert submit.submit_main([str(source), f"--student={sid}", "--out", str(tmp_path / "handin")]) == 2
    err = capsys.readouterr().err
    assert "is not allowed" in err
    assert STUDENT_ID_RULE in err or "'__'" in err
    assert not (tmp_path / "handin").exists() and snapshot(source) == before


@pytest.mark.parametrize("sample, code, why", [
    ("bad-invalid-json", 1, "invalid JSON"),
    ("bad-huge-50mb", 1, "file too large"),
    ("bad-missing-cells", 1, "none of this exercise's cells were found"),
    ("tamper-edit-test", 0, "warning: FLAG ex01-test-capture: test cell edited"),   # flagged, not rejected
])
def test_submit_refuses_what_the_grader_rejects(sample, code, why, samples, tmp_path, capsys):
    src, _ = samples
    source = tmp_path / "work" / "ex01_capture_boundary.ipynb"
    source.parent.mkdir()
    shutil.copy(src / f"{sample}__ex01_capture_boundary.ipynb", source)
    before = snapshot(source)
    handin = tmp_path / "handin"
    assert submit.submit_main([str(source), "--student", "ada", "--out", str(handin)]) == code
    assert why in capsys.readouterr().out
    assert snapshot(source) == before
    written = sorted(p.name for p in handin.iterdir()) if handin.exists() else []
    assert written == (["ada__ex01_capture_boundary.ipynb"] if code == 0 else [])


def test_submit_names_the_exercise_from_the_file_name(tmp_path, capsys, exercises):
    """Any exNN_* name is handed in under the exercise's own name; an unknown exercise is a usage error."""
    source = write(answered_notebook(exercises["ex03"]), tmp_path / "ex03_my_copy.ipynb")
    assert submit.submit_main([str(source), "--student", "bo", "--out", str(tmp_path / "h")]) == 0
    assert (tmp_path / "h" / "bo__ex03_predict_recompiles.ipynb").read_bytes() == source.read_bytes()
    capsys.readouterr()
    other = write(answered_notebook(exercises["ex03"]), tmp_path / "ex42_nothing.ipynb")
    assert submit.submit_main([str(other), "--student", "bo", "--out", str(tmp_path / "h")]) == 2
    assert "no exercise ex42" in capsys.readouterr().err
    assert os.listdir(tmp_path / "h") == ["bo__ex03_predict_recompiles.ipynb"]


def test_submit_says_when_it_cannot_write_the_handin_folder(tmp_path, capsys, exercises):
    source = write(answered_notebook(exercises["ex02"]), tmp_path / "ex02_diagnose.ipynb")
    (tmp_path / "a-file").write_text("x")
    assert submit.submit_main([str(source), "--student", "ada", "--out", str(tmp_path / "a-file" / "h")]) == 2
    assert "cannot write the hand-in folder" in capsys.readouterr().err


def test_submit_hands_in_beside_the_workspace_when_the_course_folder_is_not_writable(tmp_path, monkeypatch):
    monkeypatch.setattr(submit, "HANDIN", tmp_path / "course" / "handin")
    monkeypatch.setattr(submit, "ROOT", tmp_path / "course")
    (tmp_path / "course").mkdir()
    assert submit.default_handin() == tmp_path / "course" / "handin"
    monkeypatch.setenv("COURSE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setattr(submit.os, "access", lambda path, mode: False)   # as a student in root's checkout
    assert submit.default_handin() == (tmp_path / "ws").resolve() / "handin"


def test_submit_suggests_an_ascii_id(tmp_path, capsys, exercises):
    source = write(answered_notebook(exercises["ex02"]), tmp_path / "ex02_diagnose.ipynb")
    assert submit.submit_main([str(source), "--student=José-Ñúñez", "--out", str(tmp_path / "handin")]) == 2
    err = capsys.readouterr().err
    assert "use an ASCII id such as 'Jose-Nunez'" in err and STUDENT_ID_RULE in err
    assert not (tmp_path / "handin").exists()


def test_submit_says_when_the_notebook_is_open_in_jupyterlab(tmp_path, tmp_path_factory, capsys, exercises,
                                                            monkeypatch):
    """What is handed in is what is saved: submit says when that was, and that the notebook is open in a
    running Jupyter server (a real one, with a session on it), where unsaved changes would be left out."""
    from lab_server import jupyter_server

    source = write(answered_notebook(exercises["ex02"]), tmp_path / "work" / "exercises" / "ex02_diagnose.ipynb")
    handin = tmp_path / "handin"
    state = tmp_path_factory.mktemp("jupyter-state")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(state / "runtime"))   # where submit looks for servers
    assert submit.submit_main([str(source), "--student", "ada", "--out", str(handin)]) == 0
    first = capsys.readouterr().out
    assert "as saved on disk at" in first and "is open in the Jupyter server" not in first
    assert "course submit cannot see changes that are not saved" in first   # plainly, with no server either
    assert "save it there first and run course submit again" in first
    with jupyter_server(tmp_path / "work", state) as server:
        server.api("POST", "/api/sessions", json={"path": "exercises/ex02_diagnose.ipynb", "type": "notebook",
                                                  "name": "ex02_diagnose.ipynb", "kernel": {"name": "python3"}})
        assert submit.submit_main([str(source), "--student", "ada", "--out", str(handin)]) == 0
        out = capsys.readouterr().out
    assert f"is open in the Jupyter server at {server.url}" in out and "not handed in" in out, out
    assert "course submit cannot see changes that are not saved" in out and "no copy to compare" in out, out
    assert out.count("cannot see changes") == 1, out
