"""Whether other users can reach a path: every folder on the way passable, the path itself readable.

A student's server runs the shared environment's Python and clones the edition as the student. When one
folder on the way is closed (a Python under ``/root``, which is ``0700`` or ``0710``), the hub starts and
every login fails; ``make hub`` and ``course hub-env`` ask this first and name the folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def closed_to_others(path: Path, need: int = stat.S_IROTH) -> Path | None:
    """The first folder on the way to ``path`` (or ``path`` itself, which needs the mode bits ``need``
    for others) that other users cannot pass, or None when they reach it. Symbolic links are followed."""
    path = Path(os.path.realpath(path))
    for folder in [*reversed(path.parents), path]:
        mode = folder.stat().st_mode
        wanted = need if folder == path else stat.S_IXOTH
        if mode & wanted != wanted:
            return folder
    return None
