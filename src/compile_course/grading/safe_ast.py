"""Parsing student and instructor code from several grader threads at once."""

from __future__ import annotations

import ast
import threading


# CPython 3.11's AST constructor keeps its recursion depth in shared state: parsing in
# two grader threads at once can fail with "SystemError: AST constructor recursion
# depth mismatch". Parsing is cheap, so the workers take turns.
_PARSE_LOCK = threading.Lock()


def parse(code: str) -> ast.Module:
    """``ast.parse`` that is safe to call from the grader's worker threads."""
    with _PARSE_LOCK:
        return ast.parse(code)
