"""execute_notebook in a real kernel."""

import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_tools.notebooks.execute import execute_notebook
from course_tools.notebooks.normalize import audit_notebook, lab_metadata


def tiny_notebook(path, *, error_cell=True):
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [
        new_markdown_cell("# A tiny lesson\n\nText."),
        new_code_cell("import tempfile, os\nclass Thing: pass\nprint(Thing())\n"
                      "print(folder := tempfile.mkdtemp())\nos.rmdir(folder)"),
        new_code_cell("Thing()"),
        new_code_cell("import inspect\nprint(inspect.getsourcefile(lambda: 0))"),
    ]
    if error_cell:
        boom = new_code_cell("raise ValueError('planned')")
        boom.metadata["tags"] = ["raises-exception"]
        cells.append(boom)
    nb.cells = cells
    nbformat.write(nb, path)
    return path


def test_execute_notebook_stores_normalized_outputs(tmp_path):
    source = tiny_notebook(tmp_path / "01_tiny.ipynb")
    target = tmp_path / "out" / "01_tiny.ipynb"
    nb, seconds = execute_notebook(source, target)
    assert seconds > 0
    stored = nbformat.read(target, as_version=4)
    assert stored == nb
    code = [c for c in stored.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == [1, 2, 3, 4]
    printed = code[0].outputs[0].text.splitlines()
    assert re.fullmatch(r"<__main__\.Thing object at 0xADDRESS>", printed[0])
    assert printed[1] == "<tmpdir>"
    assert re.fullmatch(r"<__main__\.Thing at 0xADDRESS>", code[1].outputs[0].data["text/plain"])
    assert code[2].outputs[0].text == "<notebook cell>\n"
    assert code[3].outputs[0].output_type == "error" and code[3].outputs[0].ename == "ValueError"
    assert all("execution" not in c.metadata for c in stored.cells)
    assert {k: stored.metadata[k] for k in ("kernelspec", "language_info")} == lab_metadata()
    assert audit_notebook(stored) == []
    assert nbformat.read(source, as_version=4).cells[1].get("outputs") == []  # source untouched


def test_execute_notebook_in_place_and_untagged_error_fails(tmp_path):
    path = tiny_notebook(tmp_path / "nb.ipynb", error_cell=False)
    execute_notebook(path)
    assert audit_notebook(nbformat.read(path, as_version=4)) == []
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(new_code_cell("raise ValueError('unplanned')"))
    nbformat.write(nb, path)
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError):
        execute_notebook(path, tmp_path / "never.ipynb")
    assert not (tmp_path / "never.ipynb").exists()
