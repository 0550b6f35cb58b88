"""The per-student storage cap, on a hub of its own whose exchange has small caps (COURSE_EXCHANGE_LIMITS):
the hand-in past the cap is refused with 429 and stores nothing; a classmate goes on handing in."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import requests
from hubtools import running_hub

from conftest import SAMPLES
from course_exchange.client import Exchange
from course_exchange.errors import ExchangeError

DATA = (SAMPLES / "correct__ex02_diagnose.ipynb").read_bytes()


def test_storage_cap_per_student():
    limits = {"MAX_HANDINS_PER_USER": 2}
    with tempfile.TemporaryDirectory(prefix="course-hub-caps-") as tmp, \
            running_hub(Path(tmp) / "state", env={"COURSE_EXCHANGE_LIMITS": json.dumps(limits)}) as hub:
        hub.add_group("course-caps-students", ["cap-a", "cap-b"])
        a, b = (Exchange(hub.exchange_url, hub.token(u)) for u in ("cap-a", "cap-b"))
        for _ in range(2):
            a.hand_in("caps", Path("ex02_diagnose.ipynb"), DATA)
        try:
            a.hand_in("caps", Path("ex02_diagnose.ipynb"), DATA)
        except ExchangeError as exc:
            assert exc.status == 429 and "storage in course caps is full" in str(exc)
            assert "nothing was stored" in str(exc)
        else:
            raise AssertionError("the hand-in past the cap was taken")
        assert len(a.my_handins("caps")["handins"]) == 2
        assert b.hand_in("caps", Path("ex02_diagnose.ipynb"), DATA)["handin"]["student"] == "cap-b"
        assert requests.get(hub.exchange_url + "api/me", timeout=30).status_code == 401


def test_an_unknown_limit_stops_the_service_with_the_reason():
    r = subprocess.run([sys.executable, "-c", "import course_exchange.limits"], capture_output=True, text=True,
                       env={"COURSE_EXCHANGE_LIMITS": '{"MAX_EVERYTHING": 3}', "PATH": ""})
    assert r.returncode != 0 and "MAX_EVERYTHING=3 is not a limit of the exchange" in r.stderr
