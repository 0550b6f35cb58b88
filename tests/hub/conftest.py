"""The hub's tests: a real JupyterHub (tests/hubtools.py) with real Unix users and a real browser."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
for folder in (TESTS, Path(__file__).resolve().parent):
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
