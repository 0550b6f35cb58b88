"""``course grade hand-back``: each student's own pages, self-contained and readable; LMS grade files."""

from __future__ import annotations

import csv
import re
import shutil
import stat
import zipfile

import pytest

from course_grader.ui.grade import main as grade_main


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


@pytest.fixture
def graded(tmp_path, submission, grade_fake):
    submission("annika4", "ex01")
    submission("annika4", "ex06")
    submission("benedikt7", "ex01", answered=False)
    (tmp_path / "subs" / "cyrano9__ex02_diagnose.ipynb").write_bytes(b"not json")   # rejected: a page all the same
    return grade_fake(tmp_path / "subs", tmp_path / "out")


def test_each_student_gets_only_their_own_self_contained_pages(tmp_path, graded, exercises):
    to = tmp_path / "back"
    assert grade_main(["hand-back", str(graded.out_dir), "--to", str(to), "--zip"]) == 0
    assert sorted(p.name for p in to.iterdir()) == [".course-hand-back", "annika4", "annika4.zip", "benedikt7",
                                                    "benedikt7.zip", "cyrano9", "cyrano9.zip"]
    ann = to / "annika4"
    assert sorted(p.name for p in ann.iterdir()) == sorted(["index.html", f"{exercises['ex01'].name}.html",
                                                            f"{exercises['ex06'].name}.html"])
    assert _mode(to) == 0o700 and _mode(ann) == 0o755 and _mode(to / "annika4.zip") == 0o644
    assert all(_mode(p) == 0o644 for p in ann.iterdir())
    with zipfile.ZipFile(to / "annika4.zip") as zf:
        assert sorted(zf.namelist()) == sorted(f"annika4/{p.name}" for p in ann.iterdir())
    # nothing of another student, no way out of the folder: moved away from everything, it still works
    elsewhere = tmp_path / "mail" / "annika4"
    shutil.copytree(ann, elsewhere)
    shutil.rmtree(graded.out_dir)
    shutil.rmtree(to)
    for page in elsewhere.iterdir():
        text = page.read_text(encoding="utf-8")
        assert "benedikt7" not in text and "cyrano9" not in text and "class index" not in text
        assert not re.search(r"<(script|link|img|iframe)\b", text)
        for target in re.findall(r'(?:href|src)="([^"]*)"', text):
            assert "/" not in target and ":" not in target, target   # a page of this folder, nothing else
            assert (elsewhere / target).is_file(), target
    index = (elsewhere / "index.html").read_text(encoding="utf-8")
    assert exercises["ex01"].title in index and exercises["ex06"].title in index and "review pending" in index


def test_lms_files_canvas_and_moodle(tmp_path, graded, exercises):
    mapping = tmp_path / "ids.csv"
    mapping.write_text("student,lms_id,name,section\nannika4,ann@uni.example,\"Smith, Annika\",A1\n"
                       "benedikt7,ben@uni.example,Benedikt Roe,A2\n", encoding="utf-8")
    assert grade_main(["hand-back", str(graded.out_dir), "--to", str(tmp_path / "back"),
                       "--lms-ids", str(mapping)]) == 0
    lms = graded.out_dir / "lms"
    assert _mode(lms) == 0o700 and all(_mode(p) == 0o600 for p in lms.iterdir())
    names = sorted({exercises[e].name for e in ("ex01", "ex02", "ex06")})
    grades = _rows(lms / "grades.csv")
    assert grades[0] == ["student", "lms_id", *names, "total", "possible"]
    by = {r[0]: dict(zip(grades[0], r, strict=True)) for r in grades[1:]}
    assert by["annika4"]["lms_id"] == "ann@uni.example" and by["cyrano9"]["lms_id"] == "cyrano9"
    ex01 = exercises["ex01"]
    assert by["annika4"][ex01.name] == f"{ex01.auto_points:g}" and by["benedikt7"][ex01.name] == "0"
    assert by["benedikt7"][exercises["ex06"].name] == ""            # nothing handed in: blank, not 0
    assert float(by["annika4"]["total"]) == float(by["annika4"][ex01.name]) + float(
        by["annika4"][exercises["ex06"].name])
    canvas = _rows(lms / "canvas.csv")
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *names]
    assert canvas[1][0] == "Points Possible" and canvas[1][5:] == [
        f"{exercises[e].auto_points + exercises[e].manual_points:g}" for e in ("ex01", "ex02", "ex06")]
    assert ["Smith, Annika", "", "", "ann@uni.example", "A1"] == canvas[2][:5]
    moodle = _rows(lms / "moodle.csv")
    assert moodle[0] == ["lms_id", "student", *names] and moodle[1][:2] == ["ann@uni.example", "annika4"]


def test_a_folder_it_did_not_write_is_refused(tmp_path, graded, capsys):
    mine = tmp_path / "documents"
    mine.mkdir()
    (mine / "thesis.tex").write_text("mine")
    assert grade_main(["hand-back", str(graded.out_dir), "--to", str(mine)]) == 2
    assert "not empty and was not written by course grade hand-back" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"] and not (graded.out_dir / "lms").exists()


def test_a_second_hand_back_replaces_the_folders_and_the_default_is_beside_out(tmp_path, graded):
    assert grade_main(["hand-back", str(graded.out_dir)]) == 0
    to = graded.out_dir.with_name("out-hand-back")
    (to / "annika4" / "stale.html").write_text("old")
    assert grade_main(["hand-back", str(graded.out_dir)]) == 0
    assert not (to / "annika4" / "stale.html").exists() and (to / "annika4" / "index.html").is_file()
