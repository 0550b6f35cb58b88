"""Make stored notebook outputs deterministic, and audit that they are.

The rules for volatile strings live in ``src/course_tools/notebooks/nbval_sanitize.cfg``: nbval
uses that file when comparing, and ``normalize_notebook`` applies the same
rules when outputs are stored, so there is one list of them.

The notebook-level metadata is stored the way JupyterLab writes it
(``lab_metadata``), so that opening and saving a notebook in Lab does not
change the file.
"""

from __future__ import annotations

import configparser
import copy
import re
from pathlib import Path

KERNEL_NAME = "python3"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VOLATILE_TAG = "nbval-ignore-output"
RAISES_TAG = "raises-exception"

# what varies in a stored output and how it is written instead: read by nbval (pyproject.toml) and by this module
SANITIZE_FILE = Path(__file__).with_name("nbval_sanitize.cfg")


def sanitize_rules(path: Path = SANITIZE_FILE) -> list[tuple[re.Pattern, str]]:
    """The (regex, replacement) pairs of the nbval sanitize file, in order."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def sanitize_text(text: str, rules=None) -> str:
    text = ANSI.sub("", text)
    for pattern, repl in rules if rules is not None else sanitize_rules():
        text = pattern.sub(repl, text)
    return text


def output_texts(output):
    """Every text an output shows: stream text, text data, an error's value and traceback."""
    kind = output.get("output_type")
    if kind == "stream":
        yield output["text"]
    elif kind in ("execute_result", "display_data"):
        for key in ("text/plain", "text/html", "text/markdown"):
            value = output.get("data", {}).get(key)
            if value is not None:
                yield "".join(value) if isinstance(value, list) else value
    elif kind == "error":
        yield output.get("evalue", "")
        yield from output.get("traceback", [])


def _map_text(output, fn) -> None:
    if output.get("output_type") == "stream":
        output["text"] = fn(output["text"])
    elif output.get("output_type") in ("execute_result", "display_data"):
        data = output.get("data", {})
        for key in ("text/plain", "text/html", "text/markdown"):
            if key in data:
                value = data[key]
                data[key] = fn("".join(value) if isinstance(value, list) else value)
    elif output.get("output_type") == "error":
        output["traceback"] = [fn(line) for line in output.get("traceback", [])]
        output["evalue"] = fn(output.get("evalue", ""))


def lab_metadata(kernel_name: str = KERNEL_NAME) -> dict:
    """The notebook metadata JupyterLab writes when it opens a notebook on this venv's kernel.

    Lab sets ``kernelspec`` to the kernel's name, display name and language,
    and ``language_info`` to what the kernel's ``kernel_info_reply`` reports
    (ipykernel's ``IPythonKernel.language_info``, which includes the Python
    version of the interpreter running the kernel: this one).
    """
    from ipykernel.ipkernel import IPythonKernel
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(kernel_name)
    return {
        "kernelspec": {"display_name": spec.display_name, "language": spec.language, "name": kernel_name},
        "language_info": copy.deepcopy(IPythonKernel.language_info),
    }


def apply_lab_metadata(nb, metadata: dict | None = None) -> bool:
    """Store ``kernelspec`` and ``language_info`` as Lab writes them; True if ``nb`` changed.

    Release and ``course normalize`` call this too, so every stored notebook
    carries the same metadata. Only these two keys are touched.
    """
    metadata = metadata if metadata is not None else lab_metadata()
    changed = False
    for key, value in metadata.items():
        if nb.metadata.get(key) != value:
            nb.metadata[key] = copy.deepcopy(value)
            changed = True
    return changed


def normalize_notebook(nb) -> None:
    """Sanitize every output in place, drop volatile metadata, store Lab's metadata."""
    rules = sanitize_rules()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            _map_text(output, lambda t: sanitize_text(t, rules))
    nb.metadata.pop("widgets", None)
    apply_lab_metadata(nb)


def audit_notebook(nb) -> list[str]:
    """Problems in a notebook's stored outputs; an empty list means clean."""
    rules = sanitize_rules()
    problems: list[str] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        where = f"cell {index}"
        tags = set(cell.metadata.get("tags", []))
        if cell.source.strip() and cell.get("execution_count") is None:
            problems.append(f"{where}: never executed (no stored output)")
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "stream" and output.get("name") == "stderr":
                problems.append(f"{where}: stderr output: {output['text'][:80]!r}")
            if kind == "error" and RAISES_TAG not in tags:
                problems.append(f"{where}: unexpected {output.get('ename')}: {output.get('evalue', '')[:80]}")
            for text in output_texts(output):
                if ANSI.search(text):
                    problems.append(f"{where}: ANSI escape codes in output")
                if sanitize_text(text, rules) != ANSI.sub("", text):
                    problems.append(f"{where}: unnormalized volatile string in output")
    return problems
