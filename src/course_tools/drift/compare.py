"""Which compared cells changed between the stored outputs and a run under another torch or Python.

"Compared" means what ``pytest --nbval`` compares: a code cell that was executed
in the stored notebook and is not tagged (or commented) to skip or to ignore its
output; streams are merged per name, metadata, tracebacks and images are left
out, and every text goes through the course's sanitize rules.

A changed cell is classified as:

- ``version-report``: the cell is tagged ``version-report``, or, once each build's
  own version facts (torch's version with and without its local suffix, its git
  commit, its CUDA version; Python's version, ``3.12.1`` and ``3.12``, and its
  ``python3.12``/``cp312`` names) and the course's torch pin are replaced by one
  placeholder, the outputs are equal except for whole lines added or removed
  that themselves name a build (``start()``'s warning that the outputs were
  recorded with another torch is such a line). Such a cell only reports which
  build ran.
- ``behaviour``: anything else: a value, a message, an exception type, a count.
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from nbval.plugin import coalesce_streams, find_comment_markers, find_metadata_tags, transform_streams_for_comparison

from ..notebooks.normalize import sanitize_rules, sanitize_text

VERSION_TAG = "version-report"
VERSION_PLACEHOLDER = "<build>"
# The keys nbval 0.11 leaves out of a comparison (its IPyNbFile.skip_compare without nbdime).
SKIPPED_KEYS = frozenset({"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                          "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"})


class ChangeKind(StrEnum):
    VERSION_REPORT = "version-report"
    BEHAVIOUR = "behaviour"


@dataclass
class BuildFacts:
    """What identifies one build (a torch on a Python) in printed output."""

    version: str                      # torch.__version__, e.g. 2.14.1+cu130
    git_version: str = ""             # torch.version.git_version
    cuda: str | None = None           # torch.version.cuda
    python: str = ""                  # platform.python_version(), e.g. 3.12.1

    def name(self) -> str:
        """``torch 2.14.1+cu130`` and, when known, ``on Python 3.12.1``: the build as the report names it."""
        return f"torch {self.version}" + (f" on Python {self.python}" if self.python else "")

    def strings(self) -> list[str]:
        found = {self.version, self.version.split("+")[0]}
        if self.git_version:
            found |= {self.git_version, self.git_version[:12], self.git_version[:7]}
        if self.cuda:
            found.add(self.cuda)
        if self.python:
            major, minor = self.python.split(".")[:2]
            found |= {self.python, f"{major}.{minor}", f"python{major}.{minor}", f"cp{major}{minor}"}
        return sorted((s for s in found if s), key=len, reverse=True)


@dataclass
class CellChange:
    notebook: str
    cell: int              # index in the notebook's cell list
    cell_id: str
    kind: ChangeKind
    reason: str
    diff: str
    source: str = field(repr=False, default="")


@dataclass
class NotebookResult:
    notebook: str
    compared: int
    changes: list[CellChange]
    error: str = ""        # the run produced no notebook (it crashed or timed out)
    stale: list[int] = field(default_factory=list)  # cells whose stored output the pinned torch no longer prints

    def to_dict(self) -> dict:
        return asdict(self)


def is_compared(cell) -> bool:
    """nbval's rule: an executed code cell whose output is checked."""
    if cell.cell_type != "code" or cell.get("execution_count") is None:
        return False
    options = dict(find_metadata_tags(cell.metadata))
    options.update(find_comment_markers(cell.source))
    return not options.get("skip", False) and options.get("check", True)


def compared_texts(outputs, rules) -> dict[str, list[str]]:
    """nbval's view of a cell's outputs: every compared key with its sanitized values, in order."""
    flat: dict[str, list[str]] = {}
    for output in transform_streams_for_comparison(coalesce_streams(copy.deepcopy(list(outputs)))):
        for key, value in output.items():
            if key in SKIPPED_KEYS:
                continue
            items = value.items() if key == "data" else [(key, value)]
            for name, item in items:
                if name in SKIPPED_KEYS:
                    continue
                text = "".join(item) if isinstance(item, list) else item
                flat.setdefault(name, []).append(sanitize_text(text, rules) if isinstance(text, str) else repr(text))
    return flat


def as_lines(flat: dict[str, list[str]]) -> list[str]:
    lines = []
    for key in sorted(flat):
        for value in flat[key]:
            lines.append(f"[{key}]")
            lines.extend(value.splitlines() or [""])
    return lines


def mask_builds(text: str, builds: list[BuildFacts], pin: str | None) -> str:
    strings = {s for b in builds for s in b.strings()} | ({pin} if pin else set())
    for s in sorted(strings, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(s)}(?![\w.])", VERSION_PLACEHOLDER, text)
    return text


def classify(cell, before: list[str], after: list[str], builds: list[BuildFacts], pin: str | None):
    if VERSION_TAG in cell.metadata.get("tags", []):
        return ChangeKind.VERSION_REPORT, f"tagged {VERSION_TAG}"
    old = mask_builds("\n".join(before), builds, pin).splitlines()
    new = mask_builds("\n".join(after), builds, pin).splitlines()
    if old == new:
        return ChangeKind.VERSION_REPORT, "equal once the builds' versions are masked"
    edits = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if all(tag in ("insert", "delete") and all(VERSION_PLACEHOLDER in line for line in old[i1:i2] + new[j1:j2])
           for tag, i1, i2, j1, j2 in edits):
        return ChangeKind.VERSION_REPORT, "only lines that name a build were added or removed"
    return ChangeKind.BEHAVIOUR, "outputs differ beyond version strings"


def changed_cells(stored, before, after) -> list[tuple[int, object, list[str], list[str]]]:
    """``(index, stored cell, before lines, after lines)`` for each compared cell whose outputs differ."""
    rules = sanitize_rules()
    changed = []
    for index, (cell, old, new) in enumerate(zip(stored.cells, before.cells, after.cells, strict=False)):
        if not is_compared(cell):
            continue
        old_lines = as_lines(compared_texts(old.get("outputs", []), rules))
        new_lines = as_lines(compared_texts(new.get("outputs", []), rules))
        if old_lines != new_lines:
            changed.append((index, cell, old_lines, new_lines))
    return changed


def compare_notebooks(name: str, stored, candidate, builds: list[BuildFacts], pin: str | None = None,
                      reference=None) -> NotebookResult:
    """Compare the candidate run of one notebook with its stored outputs, cell by cell (matched by position).

    With ``reference`` (the same notebook re-run under the pinned torch), the
    candidate is compared with that run instead, which isolates what torch
    changed, and cells where the reference run differs from the stored outputs
    are listed as ``stale``.
    """
    result = NotebookResult(name, sum(is_compared(c) for c in stored.cells), [])
    runs = [candidate] + ([reference] if reference is not None else [])
    if any(len(run.cells) != len(stored.cells) for run in runs):
        counts = ", ".join(str(len(run.cells)) for run in runs)
        result.error = f"cell count changed: {len(stored.cells)} stored, {counts} re-run (was the notebook edited?)"
        return result
    before = reference if reference is not None else stored
    if reference is not None:
        result.stale = [index for index, *_ in changed_cells(stored, stored, reference)]
    for index, cell, old, new in changed_cells(stored, before, candidate):
        kind, reason = classify(cell, old, new, builds, pin)
        diff = "\n".join(difflib.unified_diff(old, new, "before", "after", n=1, lineterm=""))
        result.changes.append(CellChange(name, index, cell.get("id", ""), kind, reason, diff, cell.source))
    return result
