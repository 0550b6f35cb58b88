"""docs/grader-design.md's module table says what the modules' docstrings say (course_tools.module_table)."""

from __future__ import annotations

import pytest

from course_tools import module_table


def test_the_page_table_is_the_one_the_docstrings_give():
    page = module_table.PAGE.read_text(encoding="utf-8")
    assert module_table.page_with_table(page, module_table.table()) == page, (
        "docs/grader-design.md's module table has drifted: run `python -m course_tools.module_table --write`")


def test_every_grader_module_has_a_row():
    rows = module_table.table()
    for path in (module_table.SRC / "course_grader").rglob("*.py"):
        rel = path.relative_to(module_table.SRC / "course_grader").as_posix().removesuffix("__init__.py")
        assert f"| `{rel or 'course_grader/'}` |" in rows


def test_a_changed_docstring_is_a_drift(tmp_path):
    (tmp_path / "course_grader").mkdir()
    module = tmp_path / "course_grader" / "step.py"
    module.write_text('"""One step.\n\nDetails that stay out of the table."""\n')
    before = module_table.table(src=tmp_path)
    assert "| `step.py` | One step. |" in before
    module.write_text('"""One step, renamed."""\n')
    assert module_table.table(src=tmp_path) != before


def test_a_page_without_markers_is_refused():
    with pytest.raises(ValueError, match="markers"):
        module_table.page_with_table("# no table here\n", "| a | b |")
