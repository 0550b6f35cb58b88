"""The AST allow-list for measured code, as the grader process uses it.

The implementation is ``course_grader.harness.allowlist`` (the measuring process
re-checks with the same code, and can import only ``course_grader.harness``).
Here its parser is switched to ``course_grader.intake.integrity.parse`` so that all
parsing of student code in the grader process takes one lock.
"""

from __future__ import annotations

from course_grader.harness import allowlist as _impl
from course_grader.harness.allowlist import (  # noqa: F401  (the public names)
    ALLOWED_NODES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
    MAX_CONSTANT_CHARS,
    MAX_DEPTH,
    MAX_NODES,
    MAX_SOURCE_CHARS,
    SAFE_BUILTINS,
    AllowList,
    AllowListError,
    check_function,
    extract_function,
    load_checked,
    parse_source,
)
from course_grader.intake import integrity

_impl.PARSER = integrity.parse
