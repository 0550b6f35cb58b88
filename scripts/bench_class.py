"""A class for the benchmarks: the bundled samples as distinct students hand them in."""

from __future__ import annotations

import json
import re
from pathlib import Path

DOCSTRING = re.compile(r'^(def \w+\(.*\)(?:\s*->\s*[^:\n]+)?:\n\s+""")', re.MULTILINE)


def distinct_copy(notebook: dict, student: str) -> dict:
    """The sample as ``student`` hands it in: each answered function's docstring names the student,
    so the measured code differs between students, as in a real class. A measurement is cached per
    run by its payload; copies equal to each other or to the model answers would share replies
    where real students do not."""
    for cell in notebook["cells"]:
        if cell.get("metadata", {}).get("course", {}).get("kind") == "solution":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = DOCSTRING.sub(lambda m: f"{m.group(1)}[{student}] ", source)
    return notebook


def write_distinct(sample: Path, student: str, target: Path) -> Path:
    """``sample`` rewritten by :func:`distinct_copy` for ``student``, saved as ``target``."""
    notebook = distinct_copy(json.loads(sample.read_text(encoding="utf-8")), student)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return target
