"""The exchange's tests run against a real hub (tests/hubtools.py), one per test worker, on free ports."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

import os  # noqa: E402

from hubtools import hub_fixture  # noqa: E402

hub = hub_fixture(scope="session")   # one hub per test worker, on free ports: tests use their own courses

import itertools  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402

from course_exchange.client import Exchange  # noqa: E402

ROOT = TESTS.parent
SAMPLES = TESTS / "samples" / "submissions"
COURSE_CMD = Path(sys.executable).parent / "course"
_ids = itertools.count(1)


class Course:
    """A course of its own on the shared hub: ``students`` and ``instructors`` in its two hub groups."""

    def __init__(self, hub, cid: str, students: list[str], instructors: list[str]):
        self.hub, self.id, self.students, self.instructors = hub, cid, students, instructors
        hub.add_group(f"course-{cid}-students", students)
        hub.add_group(f"course-{cid}-instructors", instructors)
        self.tokens = {u: hub.token(u) for u in [*students, *instructors]}

    def client(self, user: str) -> Exchange:
        return Exchange(self.hub.exchange_url, self.tokens[user])

    def env(self, user: str) -> dict[str, str]:
        """A Lab terminal's environment on the hub, as ``user``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTERHUB_", "COURSE_EXCHANGE"))}
        env.update({"JUPYTERHUB_API_TOKEN": self.tokens[user], "COURSE_EXCHANGE_URL": self.hub.exchange_url})
        return env

    def course(self, user: str, *args, check: bool = False, cwd=None) -> subprocess.CompletedProcess:
        """``course ARGS...`` run as ``user`` in their Lab terminal."""
        r = subprocess.run([str(COURSE_CMD), *map(str, args)], env=self.env(user), capture_output=True, text=True,
                           timeout=900, cwd=cwd or ROOT)
        if check and r.returncode != 0:
            raise AssertionError(f"course {' '.join(map(str, args))} as {user}: {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r


@pytest.fixture
def make_course(hub):
    """``make_course(students=2, instructors=1)``: a fresh course with fresh users (names unique per test)."""

    def make(students: int = 2, instructors: int = 1) -> Course:
        n = next(_ids)
        cid = f"t{os.getpid() % 10000}-{n}"
        return Course(hub, cid, [f"ex{n}-s{i}" for i in range(students)],
                      [f"ex{n}-prof{i}" for i in range(instructors)])

    return make
