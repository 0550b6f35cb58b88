"""Discovery: lstat before anything, every bad entry a rejection with a reason, duplicates chosen by the files alone."""

from __future__ import annotations

import os
import stat

import pytest

from course_grader.intake.discover import Candidate, choose, discover


def _reasons(root):
    found, problems = discover(root)
    return {c.rel: c.reason for c in found}, problems


def test_both_layouts_are_found_with_student_and_exercise(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "ex01_capture_boundary.ipynb").write_text("{}")
    (tmp_path / "bob__ex02_diagnose (1).ipynb").write_text("{}")
    (tmp_path / "alice" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "alice" / ".ipynb_checkpoints" / "ex01_capture_boundary-checkpoint.ipynb").write_text("{}")
    found, problems = discover(tmp_path)
    assert [(c.student, c.exercise, c.ok) for c in found] == [("alice", "ex01", True), ("bob", "ex02", True)]
    assert problems == ["alice/.ipynb_checkpoints/ex01_capture_boundary-checkpoint.ipynb: an editor checkpoint copy "
                        "(Jupyter's autosave), not a hand-in; not graded"]


def test_a_hidden_notebook_is_rejected_with_a_reason_not_ignored(tmp_path):
    (tmp_path / ".erin__ex01_capture_boundary.ipynb").write_text("{}")
    (tmp_path / "frank").mkdir()
    (tmp_path / "frank" / ".ex02_diagnose.ipynb").write_text("{}")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "gina__ex01_x.ipynb").write_text("{}")
    found, problems = discover(tmp_path)
    assert [(c.rel, c.student, c.exercise) for c in found] == [
        (".erin__ex01_capture_boundary.ipynb", "erin", "ex01"), ("frank/.ex02_diagnose.ipynb", "frank", "ex02")]
    assert all(not c.ok and "starts with '.'" in c.reason for c in found)
    assert problems == [".git/gina__ex01_x.ipynb: part of git's own records, not a hand-in; not graded"]


def test_a_folder_named_like_a_submission_is_rejected(tmp_path):
    (tmp_path / "carol__ex01_x.ipynb").mkdir()
    reasons, _ = _reasons(tmp_path)
    assert reasons == {"carol__ex01_x.ipynb": "a folder, not a regular file"}


def test_a_symlink_is_rejected_and_never_followed(tmp_path):
    secret = tmp_path.parent / f"{tmp_path.name}-secret.ipynb"
    secret.write_text("{}")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "dave__ex01_x.ipynb").symlink_to(secret)
    (subs / "erin").symlink_to(tmp_path)          # a symlinked student folder is not walked
    reasons, problems = _reasons(subs)
    assert reasons == {"dave__ex01_x.ipynb": "a symbolic link, not a regular file"}
    assert problems == ["erin: a symbolic link, not a student folder; not followed"]


def test_a_fifo_is_rejected_without_opening_it(tmp_path):
    os.mkfifo(tmp_path / "frank__ex01_x.ipynb")
    reasons, _ = _reasons(tmp_path)   # opening a FIFO for reading would block: this returns at once
    assert reasons == {"frank__ex01_x.ipynb": "a FIFO (named pipe), not a regular file"}


def test_a_device_is_rejected(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(tmp_path / "gina__ex01_x.ipynb", stat.S_IFCHR | 0o600, os.makedev(1, 3))   # like /dev/null
    reasons, _ = _reasons(tmp_path)
    assert reasons == {"gina__ex01_x.ipynb": "a device, not a regular file"}


def test_names_that_tell_no_student_or_exercise_are_rejected(tmp_path):
    (tmp_path / "ex01_capture_boundary.ipynb").write_text("{}")
    (tmp_path / "hank__notes.ipynb").write_text("{}")
    (tmp_path / "-rf__ex01_x.ipynb").write_text("{}")
    (tmp_path / "ivy").mkdir()
    (tmp_path / "ivy" / "deeper").mkdir()
    (tmp_path / "ivy" / "deeper" / "ex01_x.ipynb").write_text("{}")
    found, _ = discover(tmp_path)
    by = {c.rel: c for c in found}
    unnamed = by["ex01_capture_boundary.ipynb"]
    assert unnamed.student is None and "cannot tell the student" in unnamed.reason
    assert by["hank__notes.ipynb"].student == "hank" and "exercise id" in by["hank__notes.ipynb"].reason
    assert by["-rf__ex01_x.ipynb"].student is None and "not allowed" in by["-rf__ex01_x.ipynb"].reason
    deep = by["ivy/deeper/ex01_x.ipynb"]         # found, and rejected with a reason: never dropped
    assert deep.student is None and "too deep" in deep.reason


def test_an_unlistable_student_folder_is_a_problem_not_a_crash(tmp_path, monkeypatch):
    (tmp_path / "jack").mkdir()
    real = os.scandir

    def scandir(path):
        if str(path).endswith("jack"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found, problems = discover(tmp_path)
    assert found == [] and problems == ["jack: cannot list this folder (Permission denied)"]


def test_the_submissions_path_itself_must_be_a_real_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "link")


def _cand(rel, mtime):
    return Candidate(rel, None, "kim", "ex01", "", mtime, 10)


def test_duplicate_choice_depends_only_on_the_files():
    a, b, c = _cand("kim/ex01_a.ipynb", 5), _cand("kim__ex01_b.ipynb", 9), _cand("kim/ex01_c.ipynb", 9)
    loadable = {a.rel: True, b.rel: False, c.rel: True}
    results = {choose(order, lambda x: loadable[x.rel])[0].rel for order in ([a, b, c], [c, b, a], [b, a, c])}
    assert results == {"kim/ex01_c.ipynb"}          # loadable beats newer-but-broken; then newest; then path
    counted, ignored = choose([a, c], lambda x: True)
    assert counted is c and ignored == [a]
    assert choose([_cand("z", 1), _cand("a", 1)], lambda x: True)[0].rel == "a"


@pytest.mark.parametrize("sid, shown, suggestion", [
    ("José-Ñúñez", "'é' (U+00E9 LATIN SMALL LETTER E WITH ACUTE)", "'Jose-Nunez'"),
    ("\u0430lice", "'а' (U+0430 CYRILLIC SMALL LETTER A) is not allowed (it looks like a Latin letter", "'alice'"),
    ("ada lovelace", "' ' (U+0020 SPACE)", "'ada-lovelace'"),
])
def test_a_non_ascii_id_is_refused_with_the_rule_and_an_ascii_id_to_use(tmp_path, sid, shown, suggestion):
    from course_grader.intake.discover import STUDENT_ID_RULE

    (tmp_path / sid).mkdir()
    (tmp_path / sid / "ex01_capture_boundary.ipynb").write_text("{}")
    (tmp_path / f"{sid}__ex02_diagnose.ipynb").write_text("{}")
    found, _ = discover(tmp_path)
    assert len(found) == 2
    for cand in found:
        assert cand.student is None
        assert shown in cand.reason and STUDENT_ID_RULE in cand.reason
        assert f"use an ASCII id such as {suggestion}" in cand.reason


def test_a_trailing_newline_is_not_part_of_an_allowed_id(tmp_path):
    (tmp_path / "ada\n").mkdir()
    (tmp_path / "ada\n" / "ex01_capture_boundary.ipynb").write_text("{}")
    [cand] = discover(tmp_path)[0]
    assert cand.student is None and "U+000A" in cand.reason


def test_nothing_three_folders_deep_is_dropped_silently(tmp_path):
    deep = tmp_path / "deepbob" / "submission" / "week1"
    deep.mkdir(parents=True)
    (deep / "ex02_diagnose.ipynb").write_text("{}")
    (tmp_path / "deepbob" / "submission" / "ex03_predict_recompiles.ipynb").write_text("{}")
    (tmp_path / "deepbob" / "notes.pdf").write_text("%PDF")
    (tmp_path / "deepbob" / "submission" / "link").symlink_to(tmp_path)
    found, problems = discover(tmp_path)
    by_rel = {c.rel: c for c in found}
    assert set(by_rel) == {"deepbob/submission/week1/ex02_diagnose.ipynb",
                           "deepbob/submission/ex03_predict_recompiles.ipynb"}
    assert all("too deep" in c.reason and c.student is None for c in found)
    assert any(p.startswith("deepbob/notes.pdf: not a notebook") for p in problems)
    assert any(p.startswith("deepbob/submission/link: a symbolic link") for p in problems)


def test_a_folder_past_the_depth_limit_is_reported(tmp_path):
    from course_grader.intake.discover import MAX_DEPTH

    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_DEPTH + 1)])
    deep.mkdir(parents=True)
    _, problems = discover(tmp_path)
    assert any(f"more than {MAX_DEPTH} levels down" in p for p in problems)


def _every_file(root):
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir() or p.name.endswith(".ipynb")}


def _accounted_for(root) -> tuple[list, list[str], set[str]]:
    """Discovery's answer, and the files it says nothing about: a candidate names its file, a problem line
    starts with the entry's path, a hidden or ignored folder's line names its other files after the folder."""
    found, problems = discover(root)
    said = {c.rel for c in found}
    for line in problems:
        head, _, tail = line.partition(": ")
        said.add(head)
        if tail.endswith(")") and "(" in tail:
            said |= {f"{head}/{name}" for name in tail[tail.rindex("(") + 1:-1].split(", ")}
    return found, problems, _every_file(root) - said


def test_nothing_in_hidden_or_ignored_folders_three_deep_is_dropped_silently(tmp_path):
    bob = tmp_path / "bob"
    for folder in (".week1", "a/b/.ipynb_checkpoints", "a/.hidden/c", ".git/objects/ab", "__MACOSX/bob"):
        (bob / folder).mkdir(parents=True)
    (bob / ".week1" / "ex02_diagnose.ipynb").write_text("{}")                       # a hidden folder
    (bob / ".week1" / "notes.txt").write_text("")
    (bob / "a" / "b" / ".ipynb_checkpoints" / "ex01_capture_boundary-checkpoint.ipynb").write_text("{}")
    (bob / "a" / ".hidden" / "c" / "ex03_predict_recompiles.ipynb").write_text("{}")   # three folders deep
    (bob / "a" / ".hidden" / "c" / ".ipynb_checkpoints").mkdir()
    (bob / "a" / ".hidden" / "c" / ".ipynb_checkpoints" / "x-checkpoint.ipynb").write_text("{}")
    (bob / ".git" / "objects" / "ab" / "cdef").write_bytes(b"x")
    (bob / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (bob / "__MACOSX" / "bob" / "._ex02_diagnose.ipynb").write_bytes(b"\0\5\26\7")
    (bob / ".DS_Store").write_bytes(b"\0")
    (tmp_path / ".erin").mkdir()
    (tmp_path / ".erin" / "ex01_capture_boundary.ipynb").write_text("{}")
    found, problems, silent = _accounted_for(tmp_path)
    assert silent == set()
    by = {c.rel: c for c in found}
    assert set(by) == {"bob/.week1/ex02_diagnose.ipynb", "bob/a/.hidden/c/ex03_predict_recompiles.ipynb",
                       ".erin/ex01_capture_boundary.ipynb"}
    assert not any(c.ok for c in found) and all("hidden folder" in c.reason for c in found)
    assert (by[".erin/ex01_capture_boundary.ipynb"].student, by[".erin/ex01_capture_boundary.ipynb"].exercise) \
        == ("erin", "ex01")                                      # rejected for erin, with the reason
    assert by["bob/.week1/ex02_diagnose.ipynb"].student is None   # too deep to tell: listed as unattributed
    assert "bob/.week1: 1 file that is not a notebook, in a hidden folder; not graded (notes.txt)" in problems
    assert any(p.startswith("bob/a/b/.ipynb_checkpoints/ex01_capture_boundary-checkpoint.ipynb: an editor "
                            "checkpoint copy") for p in problems)
    assert any(p.startswith("bob/a/.hidden/c/.ipynb_checkpoints/x-checkpoint.ipynb: an editor checkpoint copy")
               for p in problems)
    assert "bob/.git: 2 files that are not notebooks, in git's own folder; not graded (HEAD, objects/ab/cdef)" \
        in problems
    assert any(p.startswith("bob/__MACOSX/bob/._ex02_diagnose.ipynb: a macOS archive's resource fork")
               for p in problems)
    assert "bob/.DS_Store: a hidden file, not a notebook (.ipynb); not graded" in problems


def test_an_ignored_folder_with_many_files_is_one_line(tmp_path):
    objects = tmp_path / "kim" / ".git" / "objects"
    objects.mkdir(parents=True)
    for i in range(40):
        (objects / f"{i:02d}").write_bytes(b"x")
    found, problems = discover(tmp_path)
    assert found == [] and len(problems) == 1   # five files named, all 40 counted
    assert problems[0].startswith("kim/.git: 40 files that are not notebooks, in git's own folder; not graded "
                                  "(objects/00, objects/01, objects/02, objects/03, objects/04 and 35 more)")


def test_course_collect_s_record_is_known_and_nothing_else_is(tmp_path):
    from course_grader.intake.discover import COLLECT_RECORD

    (tmp_path / COLLECT_RECORD).write_text("{}")                 # course collect's own, beside the hand-ins
    (tmp_path / "lee__ex01_capture_boundary.ipynb").write_text("{}")
    (tmp_path / "lee").mkdir()
    (tmp_path / "lee" / COLLECT_RECORD).write_text("{}")         # not where collect writes it: a student's file
    found, problems = discover(tmp_path)
    assert [c.rel for c in found] == ["lee__ex01_capture_boundary.ipynb"]
    assert problems == [f"lee/{COLLECT_RECORD}: a hidden file, not a notebook (.ipynb); not graded"]
