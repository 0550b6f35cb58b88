"""sanitize_text / normalize_notebook / audit_notebook."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from compile_course.notebooks import normalize
from compile_course.notebooks.normalize import audit_notebook, normalize_notebook, sanitize_rules, sanitize_text

ROOT = Path(__file__).resolve().parents[1]


def test_rules_come_from_the_nbval_sanitize_file():
    assert normalize.SANITIZE_FILE == ROOT / "tests" / "nbval_sanitize.cfg"
    rules = sanitize_rules()
    assert [r for _, r in rules] == ["0xADDRESS", "<notebook cell>", "<tmpdir>"]


def test_sanitize_text_applies_the_rules_and_strips_ansi():
    raw = ("\x1b[0;31m<function f at 0x7f3a2b1c9d40>\x1b[0m\n"
           "  File /tmp/ipykernel_4242/3141592653.py:3 in f\n"
           "cache at /tmp/tmpab_c-12/inductor\n"
           "value 0x1f stays (too short to be an address)\n")
    assert sanitize_text(raw) == ("<function f at 0xADDRESS>\n"
                                  "  File <notebook cell>:3 in f\n"
                                  "cache at <tmpdir>/inductor\n"
                                  "value 0x1f stays (too short to be an address)\n")
    assert sanitize_text(sanitize_text(raw)) == sanitize_text(raw)  # idempotent


def test_sanitize_text_with_custom_rules(tmp_path):
    cfg = tmp_path / "rules.cfg"
    cfg.write_text("[pids]\nregex: pid \\d+\nreplace: pid N\n")
    assert sanitize_text("pid 1234 at 0x7fffabcdef", sanitize_rules(cfg)) == "pid N at 0x7fffabcdef"


def executed_notebook():
    nb = new_notebook()
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nb.metadata["widgets"] = {"state": {}}
    cell = new_code_cell("print(f)", execution_count=1)
    cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    cell.outputs = [
        new_output("stream", name="stdout", text="<function f at 0x7f3a2b1c9d40> in /tmp/ipykernel_1/2.py\n"),
        new_output("execute_result", data={"text/plain": "\x1b[1m/tmp/tmpxyz\x1b[0m"}, execution_count=1),
    ]
    err = new_code_cell("1/0", execution_count=2)
    err.metadata["tags"] = ["raises-exception"]
    err.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero at 0xdeadbeef00",
                              traceback=["\x1b[0;31mZeroDivisionError\x1b[0m at /tmp/ipykernel_9/9.py"])]
    nb.cells = [new_markdown_cell("# Title"), cell, err]
    return nb


def test_normalize_notebook_sanitizes_and_drops_volatile_metadata():
    nb = executed_notebook()
    assert len(audit_notebook(nb)) >= 3  # dirty before
    normalize_notebook(nb)
    assert "version" not in nb.metadata.language_info and nb.metadata.language_info.name == "python"
    assert "widgets" not in nb.metadata
    assert "execution" not in nb.cells[1].metadata
    assert nb.cells[1].outputs[0].text == "<function f at 0xADDRESS> in <notebook cell>\n"
    assert nb.cells[1].outputs[1].data["text/plain"] == "<tmpdir>"
    assert nb.cells[2].outputs[0].traceback == ["ZeroDivisionError at <notebook cell>"]
    assert nb.cells[2].outputs[0].evalue == "division by zero at 0xADDRESS"
    assert audit_notebook(nb) == []
    nbformat.validate(nb)


def clean_cell(source="print(1)", outputs=None, tags=None):
    cell = new_code_cell(source, execution_count=1)
    cell.outputs = outputs if outputs is not None else [new_output("stream", name="stdout", text="1\n")]
    if tags:
        cell.metadata["tags"] = tags
    return cell


def audit(*cells):
    nb = new_notebook()
    nb.cells = list(cells)
    return audit_notebook(nb)


def test_audit_accepts_a_clean_notebook():
    assert audit(new_markdown_cell("# t"), clean_cell(), clean_cell("", outputs=[])) == []


def test_audit_flags_stderr():
    problems = audit(clean_cell(outputs=[new_output("stream", name="stderr", text="W1129 warning\n")]))
    assert problems == ["cell 0: stderr output: 'W1129 warning\\n'"]


def test_audit_flags_unexpected_errors_but_accepts_tagged_ones():
    error = new_output("error", ename="RuntimeError", evalue="boom", traceback=["RuntimeError: boom"])
    assert audit(clean_cell(outputs=[error])) == ["cell 0: unexpected RuntimeError: boom"]
    assert audit(clean_cell(outputs=[error], tags=["raises-exception"])) == []


def test_audit_flags_ansi():
    problems = audit(clean_cell(outputs=[new_output("stream", name="stdout", text="\x1b[31mred\x1b[0m\n")]))
    assert problems == ["cell 0: ANSI escape codes in output"]


def test_audit_flags_unnormalized_addresses_and_temp_paths():
    for text in ("at 0x7f3a2b1c9d40\n", "File /tmp/ipykernel_12/34.py\n", "dir /tmp/tmpq1w2e3\n"):
        out = new_output("stream", name="stdout", text=text)
        assert audit(clean_cell(outputs=[out])) == ["cell 0: unnormalized volatile string in output"], text
    html = new_output("display_data", data={"text/html": "<b>0x7f3a2b1c9d40</b>", "text/plain": "ok"})
    assert audit(clean_cell(outputs=[html])) == ["cell 0: unnormalized volatile string in output"]


def test_audit_flags_unexecuted_cells():
    cell = new_code_cell("print(1)")  # execution_count None
    assert audit(new_markdown_cell("text"), cell) == ["cell 1: never executed (no stored output)"]


def test_audit_does_not_modify_the_notebook():
    nb = executed_notebook()
    before = nbformat.writes(nb)
    audit_notebook(nb)
    assert nbformat.writes(nb) == before
