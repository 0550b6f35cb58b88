"""Make stored notebook outputs deterministic, and audit that they are.

The rules for volatile strings live in ``tests/nbval_sanitize.cfg``: nbval
uses that file when comparing, and ``normalize_notebook`` applies the same
rules when outputs are stored, so there is one list of them.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from ..paths import SANITIZE_FILE

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VOLATILE_TAG = "nbval-ignore-output"
RAISES_TAG = "raises-exception"


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


def normalize_notebook(nb) -> None:
    """Sanitize every output in place and drop volatile metadata."""
    rules = sanitize_rules()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            _map_text(output, lambda t: sanitize_text(t, rules))
    nb.metadata.pop("widgets", None)
    lang = nb.metadata.get("language_info")
    if lang:
        lang.pop("version", None)


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
