"""The one lock around ``ast.parse``, for every parse of student code in the grader and in a child.

CPython 3.11's AST constructor keeps its recursion depth in shared state: two threads parsing at once
can fail with "AST constructor recursion depth mismatch". The grader parses from its worker threads
(integrity, answers, the allow-list), so all of them take turns here. It lives in ``harness`` because
the measuring child, which can import only ``course_grader.harness``, parses with the same function.
"""

from __future__ import annotations

import ast
import threading

PARSE_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse`` under :data:`PARSE_LOCK`."""
    with PARSE_LOCK:
        return ast.parse(source, mode=mode)
