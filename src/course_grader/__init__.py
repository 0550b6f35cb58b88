"""``course_grader``: the instructor's autograder (``course grade``), version 2.

A different product from ``compile_course`` (what students import). Verdicts are
computed in this trusted process from data; student code runs only in the
sandboxed children of ``course_grader.sandbox``. Architecture and the contracts
between the parts: docs/grader-design.md. Instructor guide: docs/grading.md.
"""

import hashlib
from functools import lru_cache
from pathlib import Path

# For humans (recorded with each attempt). The attempt key uses ``grader_key()``, which
# also changes by itself whenever any grading code changes.
GRADER_VERSION = "2"

_ROOT = Path(__file__).resolve().parent
_CODE_SUFFIXES = (".py", ".j2")


def _grading_files(root: Path = _ROOT) -> list[Path]:
    """Every ``.py`` and template of the grader (not caches, not tests of the sandbox)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(_CODE_SUFFIXES)
                  and "__pycache__" not in p.parts and not p.name.startswith("test_")
                  and "tests" not in p.relative_to(root).parts)


def code_hash(root: Path = _ROOT) -> str:
    """SHA-256 over the grader's own code: relative path and content of each file, in order."""
    digest = hashlib.sha256()
    for path in _grading_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@lru_cache(maxsize=1)
def grader_key() -> str:
    """``GRADER_VERSION`` plus the code hash, computed once per run: part of every attempt's key,
    so a re-run after any change to the grader grades again instead of keeping old verdicts."""
    return f"{GRADER_VERSION}+{code_hash()[:16]}"
