"""The exchange's tests run against a real hub (tests/hubtools.py) on ports 18010-18013."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

from hubtools import hub_fixture  # noqa: E402

hub = hub_fixture(port=18010, scope="session")   # one hub for the whole package: tests use their own courses
