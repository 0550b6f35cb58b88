"""Feedback pages: title, attempt id and date; hidden tests as id, points and result only; paths from validated ids."""

from __future__ import annotations

import re

import nbformat
import pytest

from course_grader.errors import UnsafePath
from course_grader.results.feedback import page_path


def _all_output_text(out_dir) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(out_dir.rglob("*")) if p.is_file())


def test_a_failing_hidden_test_shows_id_points_and_result_only(tmp_path, submission, grade_fake, exercises, fake_host,
                                                               hidden_mark):
    ex = exercises["ex01"]
    submission("vic", "ex01", answered=False)
    hosts = []

    def host(*a):
        hosts.append(fake_host())
        return hosts[-1]

    report = grade_fake(tmp_path / "subs", tmp_path / "out", host_factory=host)
    text = _all_output_text(report.out_dir)           # pages, CSVs and the gradebook file itself
    [hidden] = ex.hidden_tests
    assert hidden_mark not in text
    for line in hidden.source.splitlines():
        if len(line.strip()) > 12:
            assert line.strip() not in text, line
    page = (report.out_dir / "feedback" / "vic" / f"{ex.name}.html").read_text()
    assert re.search(rf"{hidden.course_id} \(hidden\)</td><td>0 / 3</td>\s*"
                     r"<td class=\"failed\">failed</td><td></td>", page)
    assert "still the stub" in page                   # a public test's message is shown
    sent = "\n".join(cell for h in hosts for cell in h.cells)
    assert hidden.source not in sent                  # never sent to a kernel either


def test_each_page_carries_title_attempt_id_and_date(tmp_path, submission, grade_fake, exercises):
    submission("wes", "ex03")
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    [attempt] = report.graded
    page = (report.out_dir / "feedback" / "wes" / "ex03_predict_recompiles.html").read_text()
    assert exercises["ex03"].title in page and attempt.key[:16] in page
    assert re.search(r"graded \d{4}-\d\d-\d\d \d\d:\d\d UTC", page)


def test_the_class_index_lists_every_student(tmp_path, submission, grade_fake):
    students = ["ann", "ben", "cy", "dee"]
    for s in students:
        submission(s, "ex01")
    (tmp_path / "subs" / "eve__ex02_diagnose.ipynb").write_bytes(b"not json")   # rejected, still listed
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    index = (report.out_dir / "feedback" / "index.html").read_text()
    for s in students + ["eve"]:
        assert f">{s}</td>" in index and f'href="{s}/' in index
    for href in re.findall(r'href="([^"]+)"', index):
        assert (report.out_dir / "feedback" / href).is_file()


@pytest.mark.parametrize("student, name", [("..", "x"), ("a/b", "x"), ("ok", "../../etc/passwd"), ("ok", "a/b"),
                                           (".hidden", "x"), ("ok", "")])
def test_paths_are_built_only_from_validated_ids(tmp_path, student, name):
    with pytest.raises(UnsafePath):
        page_path(tmp_path, student, name)


def test_a_hostile_file_name_cannot_write_outside_the_output_folder(tmp_path, submission, grade_fake):
    submission("fay", "ex01")
    (tmp_path / "subs" / "fay__ex01_..%2f..%2fescape.ipynb").write_bytes(b"{}")
    (tmp_path / "subs" / "%2e%2e__ex01_x.ipynb").write_bytes(b"{}")
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    assert all(str(p).startswith(("subs/", "out/")) for p in written), written
    assert any(line.startswith("%2e%2e__ex01_x.ipynb: student id") for line in report.unattributed)


def test_a_written_answer_shows_question_answer_score_and_comment(tmp_path, submission, grade_fake, exercises):
    from course_grader.results.gradebook import Gradebook

    ex = exercises["ex06"]
    first = ex.answers[0]

    def answer(nb):
        for cell in nb.cells:
            if cell.metadata.get("course", {}).get("id") == first.course_id:
                cell.source = "Because <guards> fail & the graph recompiles."

    submission("gil", "ex06", edit=answer)
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    with Gradebook(report.gradebook) as book:
        [row] = book.current()
        [item] = [a for a in book.answers(row["key"]) if a["cell_id"] == first.course_id]
        book.set_review(row["key"], first.course_id, 1.0, "Right idea.")
        from course_grader.results.feedback import render_all

        render_all(book, report.out_dir)
    page = (report.out_dir / "feedback" / "gil" / f"{ex.name}.html").read_text()
    assert item["question"].startswith("**Question 1.**")
    assert "<strong>Question 1.</strong>" in page and "**Question" not in page   # markdown, rendered
    assert "Because &lt;guards&gt; fail &amp; the graph recompiles." in page
    assert "Right idea." in page and f"1 / {item['points_possible']:g}" in page


GRAPH_BREAK_LOG = (__import__("pathlib").Path(__file__).parent / "data" / "graph_break_output.txt")
# Recorded from a real sandboxed notebook kernel (GradingHost().notebook_kernel().run_cell) running
#     with compile_course.torch_logs(graph_breaks=True): torch.compile(f, backend="eager")(torch.ones(3))
# where f prints: torch's graph-break log with its "User code traceback", through the kernel's output.


def test_the_grader_frames_leave_a_graph_break_log_and_the_student_frames_stay():
    from course_grader.results.feedback import hide_grader_frames

    text = GRAPH_BREAK_LOG.read_text(encoding="utf-8")
    assert "course_grader/sandbox/template.py" in text and "IPython/core" in text   # the recording has them
    shown = hide_grader_frames(text)
    for grader in ("course_grader/sandbox/", "/IPython/", "<frozen runpy>", "result = self._run_cell(", "^^^^",
                   "exec(code_obj"):
        assert grader not in shown, grader
    kept = [line for line in text.splitlines() if line in shown.splitlines()]
    for student in ('File "<ipython-input-1-6ee1b99689f9>", line 8, in <module>', 'torch.compile(f, backend="eager")',
                    'File "<ipython-input-1-6ee1b99689f9>", line 5, in f', 'print("hi")', "User code traceback:",
                    "Graph Break Reason:", "Hint: Avoid calling builtin `print`", "gb0059.html"):
        assert any(student in line for line in kept), student
    assert shown.splitlines()[-1] == "hi"                                  # the cell's own print
    # nothing but whole grader frames went: 9 one-line frames (runpy, template, kernel), and 6 IPython
    # frames with their source line, 4 of them with a ^^^ line too
    assert len(text.splitlines()) - len(shown.splitlines()) == 9 + 6 * 2 + 4


@pytest.mark.parametrize("text", [
    "plain output\nno frames at all",
    'Traceback (most recent call last):\n  File "/home/me/my_helpers.py", line 3, in f\n'
    '    raise ValueError\nValueError',
    '  File "/work/IPythonNotes/x.py", line 1, in g\n    y()',                    # not IPython's package
])
def test_other_text_is_left_as_it_was(text):
    from course_grader.results.feedback import hide_grader_frames

    assert hide_grader_frames(text) == text


def test_the_page_shows_the_cells_output_without_the_grader_frames(tmp_path, submission, grade_fake, fake_host):
    text = GRAPH_BREAK_LOG.read_text(encoding="utf-8")

    class LoggingKernel:
        def run_cell(self, source, cell_id=""):
            from course_grader.status import CellStatus

            return type("CellResult", (), {"status": CellStatus.OK, "output": text, "error": None, "cpu_s": 0.0})()

    class Host(fake_host):
        def notebook_kernel(self):
            from contextlib import nullcontext

            return nullcontext(LoggingKernel())

    submission("hal", "ex02")
    report = grade_fake(tmp_path / "subs", tmp_path / "out", host_factory=lambda *a: Host())
    page = (report.out_dir / "feedback" / "hal" / "ex02_diagnose.html").read_text()
    assert "Graph Break Reason" in page and "ipython-input-1-6ee1b99689f9&gt;&#34;, line 5, in f" in page
    assert "course_grader/sandbox" not in page and "IPython/core" not in page
    with __import__("course_grader.results.gradebook").results.gradebook.Gradebook(report.gradebook) as book:
        [row] = book.current()
        assert any("course_grader/sandbox" in c["output"] for c in book.cells(row["key"]))  # stored as it came


def _page(report, student, name):
    return (report.out_dir / "feedback" / student / f"{name}.html").read_text(encoding="utf-8")


def test_written_answers_are_markdown_with_html_escaped_and_no_solution_markers(tmp_path, submission, grade_fake,
                                                                               exercises):
    ex = exercises["ex06"]
    first, second = ex.answers[0].course_id, ex.answers[1].course_id
    hostile = ('**Bold** and `code`.\n\n<script>alert(1)</script> <img src=x onerror=alert(2)>\n\n'
               '![tracker](http://evil.example/t.png) [link](javascript:alert(3))')

    def answer(nb):
        for cell in nb.cells:
            if cell.metadata.get("course", {}).get("id") == first:
                cell.source = hostile

    submission("ivy", "ex06", edit=answer)       # the other answers: the model's, markers and all
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    page = _page(report, "ivy", ex.name)
    assert "<strong>Bold</strong> and <code>code</code>." in page
    assert "<script" not in page and "<img" not in page and 'href="javascript' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and 'src="http://evil.example' not in page
    model = ex.cell(second).answer_region()
    assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page
    first_words = " ".join(model.split()[:4])
    assert first_words in " ".join(page.split())
    assert "Written answer 1" in page and f"{first} &middot;" not in page


def test_cells_are_named_by_their_first_line_not_a_number(tmp_path, submission, grade_fake):
    def own_cell(nb):
        nb.cells.insert(3, nbformat.v4.new_code_cell("\n# trying it on zeros\nprint(1)"))

    submission("jo", "ex01", edit=own_cell)
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    page = _page(report, "jo", "ex01_capture_boundary")
    assert "your cell &#34;# trying it on zeros&#34;" in page
    assert "course cell &#34;from compile_course import start; start()&#34;" in page
    assert "#4" not in page and "cell #" not in page and "locked ex01-setup" not in page


def test_the_class_index_shows_a_pending_review_as_pending(tmp_path, submission, grade_fake, exercises):
    from course_grader.results.feedback import render_all
    from course_grader.results.gradebook import Gradebook

    for s in ("kim", "lou"):
        submission(s, "ex06")
    report = grade_fake(tmp_path / "subs", tmp_path / "out")
    possible = exercises["ex06"].manual_points
    index = (report.out_dir / "feedback" / "index.html").read_text(encoding="utf-8")
    assert index.count(f"review pending</span> (out of {possible:g})") == 2 and f"0 / {possible:g}" not in index
    assert "review pending" in _page(report, "kim", "ex06_check_understanding")
    with Gradebook(report.gradebook) as book:
        row = next(r for r in book.current() if r["student"] == "kim")
        for a in book.answers(row["key"]):
            book.set_review(row["key"], a["cell_id"], 0.0, "")
        render_all(book, report.out_dir)
    index = (report.out_dir / "feedback" / "index.html").read_text(encoding="utf-8")
    assert index.count("review pending") == 1 and f"<td>0 / {possible:g}</td>" in index
    assert f"<b>0 / {possible:g}</b>" in _page(report, "kim", "ex06_check_understanding")
