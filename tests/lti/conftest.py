"""LTI 1.3 tests: a real platform (tests/lti/platform.py) and a real hub (tests/hubtools.py) on loopback."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
for folder in (TESTS, TESTS / "hub"):       # hubtools, unix_users; the hub tests' lab_browser
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
