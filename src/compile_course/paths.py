"""Where the course's folders are: one place for every module that needs them.

The course folder (``ROOT``: the one holding ``notebooks/``, ``exercises/``, ``build/``) is

* the checkout the package is installed from, editable (the parent of ``src/``), as ``make``
  installs it: the instructor's tools always work on their own checkout;
* else ``$COURSE_ROOT`` when it is set: a hub's servers set it to the student's copy of the course,
  since their packages are installed non-editable in the hub's shared environment (``course hub-env``);
* else, for a package installed non-editable with no ``$COURSE_ROOT``, the nearest folder at or
  above the current one that holds a course (``exercises/.release-record.json``), or the current
  folder itself."""

import os
from pathlib import Path

RECORD_MARK = Path("exercises") / ".release-record.json"


def _course_root() -> Path:
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "src" / "compile_course").is_dir():
        return checkout
    chosen = os.environ.get("COURSE_ROOT")
    if chosen:
        return Path(chosen).expanduser().resolve()
    here = Path.cwd().resolve()
    return next((folder for folder in (here, *here.parents) if (folder / RECORD_MARK).is_file()), here)


ROOT = _course_root()
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
