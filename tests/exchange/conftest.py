"""The exchange's tests run against a real hub (tests/hubtools.py), one per test worker (see _port)."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

import os  # noqa: E402

from hubtools import hub_fixture  # noqa: E402


def _port() -> int:
    """Ports of this worker's hub (each xdist worker has its own session): 18010, 18030, then 18060.. by
    tens (18020 and 18050 are single tests' own hubs, 18040 the benchmark's)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    n = int(worker[2:]) if worker[2:].isdigit() else 0
    ports = [18010, 18030, 18060, 18070, 18080, 18090]
    if n >= len(ports):
        raise RuntimeError(f"tests/exchange: no hub ports for xdist worker {worker} (at most {len(ports)} workers)")
    return ports[n]


hub = hub_fixture(port=_port(), scope="session")   # one hub per test worker: tests use their own courses

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
