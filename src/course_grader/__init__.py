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

_SRC = Path(__file__).resolve().parent.parent
# the packages whose code decides a verdict: the grader, and the course's test API its test cells call
# (compile_course.testing, .measurement, .stopwatch ... judge a report in the child) with the helpers they use
GRADING_PACKAGES = ("course_grader", "compile_course")
_CODE_SUFFIXES = (".py", ".j2")


def _grading_files(src: Path = _SRC) -> list[Path]:
    """Every ``.py`` and template of :data:`GRADING_PACKAGES` under ``src`` (not caches, not tests)."""
    return sorted(p for package in GRADING_PACKAGES for p in (src / package).rglob("*")
                  if p.is_file() and p.name.endswith(_CODE_SUFFIXES) and "__pycache__" not in p.parts
                  and not p.name.startswith("test_") and "tests" not in p.relative_to(src).parts)


def code_hash(src: Path = _SRC) -> str:
    """SHA-256 over the grading code (:data:`GRADING_PACKAGES` under ``src``): relative path and content of
    each file, in order."""
    digest = hashlib.sha256()
    for path in _grading_files(src):
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@lru_cache(maxsize=1)
def grader_key() -> str:
    """``GRADER_VERSION`` plus the code hash, computed once per run: part of every attempt's key,
    so a re-run after any change to the grader grades again instead of keeping old verdicts."""
    return f"{GRADER_VERSION}+{code_hash()[:16]}"
