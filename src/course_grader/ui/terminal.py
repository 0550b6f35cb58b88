"""Output that reads as well in a log or a pipe as in a terminal, and one line on Ctrl-C.

- :func:`console`: a rich ``Console`` as wide as the terminal when the stream is one; otherwise
  (a pipe, a log file, CI) as wide as ``COLUMNS`` says, or unlimited, so a table's paths and
  reasons stay on one line each instead of being folded at rich's fallback of 80 columns.
- :func:`interrupted_line`: what a command prints on Ctrl-C instead of a traceback: one line
  that says how to go on (``course grade`` resumes; the others start again).
"""

from __future__ import annotations

import os
import sys

# "unlimited" for a stream that is not a terminal: wider than any table the course prints
LOG_WIDTH = 10_000
EXIT_INTERRUPTED = 130   # 128 + SIGINT, what a shell reports for a command ended by Ctrl-C
HOW_TO_GO_ON = {
    "grade": "run the same command again to resume: what was graded is kept and not graded again",
    "run": "run the same command again (its grading step reuses the grades already made)",
}


def console(stderr: bool = False):
    """A rich Console for stdout (or stderr) that never folds at a fixed 80 columns off a terminal."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return Console(stderr=stderr)          # the terminal's width, or the one COLUMNS asks for
    return Console(stderr=stderr, width=LOG_WIDTH, soft_wrap=True)


def interrupted_line(command: str) -> str:
    """The one line printed when ``course COMMAND`` is interrupted."""
    go_on = HOW_TO_GO_ON.get(command, "run the same command again to start it over")
    return f"course {command}: interrupted (Ctrl-C); {go_on}"
