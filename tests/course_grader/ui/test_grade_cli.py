"""``course grade`` (course_grader.ui.grade), through the ``course`` command: subcommands, usage errors and
instructor actions."""

from __future__ import annotations

import csv
import re
import shlex

import pytest

from course_grader.results.gradebook import Gradebook
from course_grader.ui.grade import DESCRIPTION, SUBCOMMANDS, parser
from course_grader.ui.grade import main as grade_main
from course_tools.cli import main as course_main


@pytest.mark.parametrize("argv, says", [
    ([], "required: subcommand"),                                         # nothing to do
    (["import-review", "r.csv"], "required: --out"),                      # no --out: no gradebook to find
    (["run", "DIR", "--clear-flag", "abc"], "unrecognized arguments: --clear-flag"),   # two actions at once
    (["clear-flag", "abc", "--out", "o"], "required: --reason"),
    (["clear-flag"], "required: ATTEMPT"),
    (["hand-back", "--zip"], "required: OUT"),
    (["run"], "required: DIR"),
    (["run", "DIR", "--jobs", "0"], "argument --jobs: must be a whole number, at least 1"),
])
def test_usage_errors_exit_2_and_say_what_is_wrong(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        grade_main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and says in err and "usage: course grade" in err, err


@pytest.mark.parametrize("argv", [["DIR", "--out", "o"], ["--clear-flag", "abc", "--reason", "x", "--out", "o"],
                                  ["--import-review", "r.csv", "--out", "o"], ["--hand-back", "o"]])
def test_the_earlier_flag_forms_are_gone(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        grade_main(argv)
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("name", [sub.name for sub in SUBCOMMANDS])
def test_each_subcommand_has_its_own_help(name, capsys):
    with pytest.raises(SystemExit) as exc:
        course_main(["grade", name, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and out.startswith(f"usage: course grade {name} [-h]"), out
    first_line = next(s for s in SUBCOMMANDS if s.name == name).run.__doc__.split()[0]
    assert first_line in out          # the run function's docstring is the description


def test_the_usage_line_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit):
        grade_main(["--help"])
    usage = capsys.readouterr().out.splitlines()[0]
    assert usage == f"usage: course grade [-h] {{{','.join(s.name for s in SUBCOMMANDS)}}} ...", usage


def test_every_form_the_description_shows_parses():
    """The forms printed by ``course grade --help`` are the ones the parser takes, with every option shown."""
    forms: list[str] = []
    for line in DESCRIPTION.splitlines():
        if line.strip().startswith("course grade "):
            forms.append(line.strip())
        elif forms and line.strip().startswith("[") and not forms[-1].endswith("."):
            forms[-1] += " " + line.strip()       # the continuation of a long form
    assert {f.split()[2] for f in forms} == {s.name for s in SUBCOMMANDS}
    for form in forms:
        words = shlex.split(re.sub(r"[\[\]|]", " ", form))[2:]
        words = ["local:2" if w == "local:N" else "3" if w == "N" else w for w in words]
        words = [w for i, w in enumerate(words) if not (w == "--scheduler" or words[i - 1] == "--scheduler")]
        assert parser().parse_args(words).subcommand == words[0], form


def test_a_file_or_a_symlink_is_not_a_submissions_folder(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert grade_main(["run", str(tmp_path / "file"), "--out", str(tmp_path / "o")]) == 2
    assert grade_main(["run", str(tmp_path / "link"), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_course_grade_is_the_new_grader(tmp_path, capsys):
    assert course_main(["grade", "clear-flag", "abc", "--reason", "x", "--out", str(tmp_path)]) == 2
    assert "no gradebook at" in capsys.readouterr().err


def test_import_review_through_the_cli(tmp_path, submission, grade_fake, capsys):
    submission("ada", "ex06")
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    sheet = report.out_dir / "review.csv"
    with open(sheet, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rows[0]["score"] = "1"
    with open(sheet, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert grade_main(["import-review", str(sheet), "--out", str(report.out_dir)]) == 0
    assert (f"review: 1 answers scored, 0 comments without a score, {len(rows) - 1} rows left blank, "
            "0 rows not applied") in capsys.readouterr().out
    with Gradebook(report.gradebook) as book:
        [row] = book.current()
        assert book.manual_score(row["key"]) == (1.0, False)
    assert "ada,ex06_check_understanding,graded,0,0,1," in (report.out_dir / "grades.csv").read_text()


@pytest.fixture
def cli_fake(monkeypatch, fake_host, stub_verdicts):
    """``course grade DIR`` through the real CLI, graded with the test doubles (no sandbox, no store)."""
    import course_grader.pipeline.grade_class as grading

    real = grading.grade_class

    def fake(*a, **kw):
        kw.update(host_factory=lambda hide, cache, limits: fake_host(), verdict_for=stub_verdicts)
        return real(*a, **kw)

    monkeypatch.setattr(grading, "grade_class", fake)


@pytest.mark.parametrize("name", ["ex9", "ex02_nope", "ex2", ""])
def test_an_unknown_exercise_is_a_usage_error_and_creates_nothing(tmp_path, submission, cli_fake, capsys, name):
    submission("ada", "ex02")
    out = tmp_path / "out"
    assert grade_main(["run", str(tmp_path / "subs"), "--exercise", name, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "grader fault" not in err and "course grade: no exercise" in err and "ex02 (ex02_diagnose)" in err
    assert not out.exists()


@pytest.mark.parametrize("name", ["ex02", "ex02_diagnose", "ex02_diagnose.ipynb"])
def test_an_exercise_is_named_by_its_id_or_its_file_name(tmp_path, submission, cli_fake, capsys, name):
    submission("ada", "ex02")
    submission("ada", "ex01")
    out = tmp_path / "out"
    assert grade_main(["run", str(tmp_path / "subs"), "--exercise", name, "--out", str(out), "--no-progress"]) == 0
    with Gradebook(out / "gradebook.sqlite") as book:
        assert [r["exercise"] for r in book.current()] == ["ex02"]
    assert "graded 1," in capsys.readouterr().out


FORGED = "problem: FORGED-LINE every submission of this class was lost"


def test_untrusted_names_are_printed_escaped_on_one_line(tmp_path, submission, cli_fake, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")   # the table does not fold a name across lines
    subs = tmp_path / "subs"
    submission("ada", "ex01")
    (subs / f"x\n{FORGED}.ipynb").write_bytes(b"{}")                       # no student: unattributed
    (subs / "bo").mkdir()
    (subs / "bo" / "zz\r[bold red]\x1b[2J\u202eFORGED.ipynb").write_bytes(b"{}")   # no exercise: in the table
    (subs / f"cy__ex01_\n{FORGED}.ipynb").write_bytes(b"not json")         # rejected, quoted in reasons
    out = tmp_path / "out"
    assert grade_main(["run", str(subs), "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    text = captured.out + captured.err
    lines = text.splitlines()
    assert not [line for line in lines if line.lstrip("│ ").startswith(("problem: FORGED", "FORGED"))], text
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert f"x\\n{FORGED}.ipynb" in text                                   # shown, escaped
    assert "bo/zz\\r[bold red]\\x1b[2J\\u202eFORGED.ipynb" in text            # not read as rich markup
    unattributed = (out / "unattributed.txt").read_text(encoding="utf-8")
    assert len(unattributed.splitlines()) == 1 and "\\n" in unattributed
    with open(out / "grades.csv", newline="", encoding="utf-8") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert not [c for c in cells if any(ch in c for ch in "\n\r\x1b\u202e")]
    assert "bo/zz\\r[bold red]\\x1b[2J\\u202eFORGED.ipynb" in cells


def test_an_html_like_file_name_is_escaped_on_the_pages(tmp_path, submission, cli_fake):
    path = submission("dee", "ex01")
    hostile = path.with_name("dee__ex01_<img src=x onerror=alert(1)>.ipynb")
    path.rename(hostile)
    out = tmp_path / "out"
    assert grade_main(["run", str(tmp_path / "subs"), "--out", str(out), "--no-progress"]) == 0
    page = (out / "feedback" / "dee" / "ex01_capture_boundary.html").read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img" not in page


@pytest.mark.parametrize("layout", ["empty", "no notebooks"])
def test_a_folder_without_submissions_is_a_usage_error_that_creates_nothing(tmp_path, capsys, layout):
    subs = tmp_path / "subs"
    subs.mkdir()
    if layout == "no notebooks":
        (subs / "README.txt").write_text("the class's submissions go here\n")
        (subs / "ada").mkdir()
        (subs / "ada" / "notes.pdf").write_bytes(b"%PDF")
    out = tmp_path / "out"
    assert grade_main(["run", str(subs), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no submissions in" in err and "STUDENT/exNN_slug.ipynb or STUDENT__exNN_slug.ipynb" in err, err
    assert "nothing was graded and nothing was created" in err
    assert not out.exists()


def test_a_folder_without_the_asked_exercise_is_a_usage_error(tmp_path, submission, capsys):
    submission("ada", "ex02")
    out = tmp_path / "out"
    assert grade_main(["run", str(tmp_path / "subs"), "--exercise", "ex03", "--out", str(out), "--no-progress"]) == 2
    assert "no submissions of ex03" in capsys.readouterr().err
    assert not out.exists()


def test_unconfine_is_not_taken_for_unconfined(tmp_path, submission, capsys):
    submission("ada", "ex02")
    with pytest.raises(SystemExit) as exc:
        grade_main(["run", str(tmp_path / "subs"), "--unconfine"])
    assert exc.value.code == 2 and "unrecognized arguments: --unconfine" in capsys.readouterr().err


def test_a_flat_folder_with_no_student_names_is_exit_2_and_its_results_folder_is_never_read(
        tmp_path, submission, cli_fake, capsys):
    """DIR/ex01_capture_boundary.ipynb names no student: nothing can be graded, which is exit 2, said plainly;
    the results folder inside DIR is not read as hand-ins on this run or the next (issue 34)."""
    path = submission("ada", "ex01")
    subs = tmp_path / "flat"
    subs.mkdir()
    path.rename(subs / "ex01_capture_boundary.ipynb")
    out = subs / "results"
    for _ in range(2):
        assert grade_main(["run", str(subs), "--out", str(out), "--no-progress"]) == 2
        captured = capsys.readouterr()
        assert "nothing in" in captured.err and "could be graded" in captured.err, captured.err
        assert "not graded (no student): ex01_capture_boundary.ipynb" in captured.err
        assert "results" not in captured.err.replace(str(out), "OUT") and "graded 0" not in captured.out


def test_a_results_folder_inside_the_graded_folder_is_not_read_as_hand_ins(tmp_path, submission, cli_fake, capsys):
    submission("ada", "ex01")
    subs = tmp_path / "subs"
    out = subs / "results"
    for _ in range(2):                       # the second run finds the first run's gradebook and pages there
        assert grade_main(["run", str(subs), "--out", str(out), "--no-progress"]) == 0
        captured = capsys.readouterr()
        assert "problem:" not in captured.out + captured.err, captured.out
    with Gradebook(out / "gradebook.sqlite") as book:
        assert [r["student"] for r in book.current()] == ["ada"]
