"""Where the course's folders are: one place for every module that needs them.

The package is installed editable from the checkout, so the checkout is the
parent of ``src/``."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
BUILD = ROOT / "build"
REQUIREMENTS = ROOT / "requirements.txt"


def writable(path: Path) -> bool:
    """Whether this user can write ``path``, or create it: its nearest existing folder is writable.
    The course's defaults (``work/``, ``handin/``, ``build/grading/``) fall back to the user's home
    when the checkout is someone else's."""
    current = Path(path)
    while not current.exists() and current != current.parent:
        current = current.parent
    return current.is_dir() and os.access(current, os.W_OK | os.X_OK)
