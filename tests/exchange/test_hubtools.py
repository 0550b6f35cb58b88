"""The fixture itself: a real hub and proxy answer, users, groups and tokens are the hub's, and stopping
leaves no process behind."""

import tempfile
from pathlib import Path

import requests
from hubtools import _leftovers, running_hub


def test_users_groups_and_tokens_come_from_the_hub(hub):
    hub.add_group("course-fx-students", ["fx-alice"])
    token = hub.token("fx-alice")
    who = requests.get(hub.api_url + "/user", headers={"Authorization": f"token {token}"}, timeout=30).json()
    assert who["name"] == "fx-alice"
    me = requests.get(hub.exchange_url + "api/me", headers={"Authorization": f"token {token}"}, timeout=30)
    assert me.status_code == 200, me.text
    assert me.json() == {"user": "fx-alice", "courses": {"fx": "student"}}
    proxy = requests.get(hub.url + "hub/api/", timeout=30)
    assert proxy.status_code == 200 and "version" in proxy.json()


def test_stopping_the_hub_ends_its_proxy_and_service():
    with tempfile.TemporaryDirectory(prefix="course-hub-stop-") as tmp:
        state = Path(tmp) / "state"
        with running_hub(state) as h:
            pids = _leftovers(state, h.storage)
            assert len(pids) >= 2, pids        # the proxy and the exchange, at least
        assert h.process.poll() is not None
        assert _leftovers(state, h.storage) == []
        assert all(not Path(f"/proc/{p}").exists() or _zombie(p) for p in pids)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True



def test_the_exchanges_start_up_line_names_an_address_that_answers(hub):
    """The line the service prints when it starts (issue 35: it lacked the '/' between port and path)."""
    import re

    [address] = re.findall(r"course-exchange: serving \S+ at (\S+)", hub.log_text())
    assert address == hub.exchange_direct_url
    assert requests.get(address + "api/me", timeout=30).status_code == 401     # the service itself, no login
