"""``printable``: the one way the grader shows an untrusted string on a console or in a text file.

File names, folder names and student ids come from the submissions folder; reasons and problems
quote them. Printed raw, a name holding a newline forges a line of the grader's own output
(``problem: ... every submission was lost``), a carriage return or an ANSI escape rewrites what is
already on screen, and a bidi override reverses what follows. ``printable`` keeps every printable
character (accents and other scripts included) and writes the others as Python escapes: ``\\n``,
``\\r``, ``\\t``, ``\\x1b``, ``\\u202e``..., with ``\\`` itself doubled so an escape cannot be
faked by a name that spells one. The result is one line.

Used by ``course grade`` for everything it prints (cli.py), for ``unattributed.txt`` and for the
cells of ``grades.csv`` and the id columns of ``review.csv`` (export.py). Feedback pages are HTML,
escaped by Jinja2's autoescape instead.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}   # controls, format (bidi, zero-width), unassigned...


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if unicodedata.category(ch) not in _HIDDEN:
        return ch
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def printable(value) -> str:
    """``value`` as one line of text with every non-printable character escaped (see the module)."""
    text = "" if value is None else str(value)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(_escape(ch) for ch in text)
