"""Where the course's folders are: one place for every module that needs them.

The package is installed editable from the checkout, so the checkout is the
parent of ``src/``."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
BUILD = ROOT / "build"
REQUIREMENTS = ROOT / "requirements.txt"
SANITIZE_FILE = ROOT / "tests" / "nbval_sanitize.cfg"
