"""tests/hostile: the corpus module and its judge are importable, and the kept submissions are not collected."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent):   # corpus.py and judge.py; tests/ordinary_user.py
    if str(folder) not in sys.path:
        sys.path.append(str(folder))

# the notebooks are submissions to grade, not notebooks for nbval to run
collect_ignore_glob = ["submissions/*"]
