"""The exchange's HTTP client, for the ``course`` commands (and the benchmark).

Where it finds the exchange and who it is, in a hub session (Lab's terminal):
``$COURSE_EXCHANGE_URL`` (the hub's spawner sets it, see :mod:`.hub_config`) and
``$JUPYTERHUB_API_TOKEN`` (the user's server token, which the hub gives every single-user server).
Outside a server (an instructor's own shell on the hub machine) ``$COURSE_EXCHANGE_TOKEN`` may hold a
token made on the hub's token page. The client never sends a name: the hub tells the service who it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import requests

from .errors import ExchangeError

TIMEOUT_S = 120.0      # a hand-in is checked by the grader's static steps: seconds on a busy machine


# what says "this process runs on a hub": a single-user server's token (Lab's terminals inherit it) or the
# exchange's address and token; `course submit` then hands in through the exchange or not at all
HUB_VARIABLES = ("JUPYTERHUB_API_TOKEN", "COURSE_EXCHANGE_URL", "COURSE_EXCHANGE_TOKEN")


def in_hub_session() -> bool:
    """Whether this process can reach an exchange as a hub user (a Lab terminal on the hub)."""
    return bool(os.environ.get("COURSE_EXCHANGE_URL")
                and (os.environ.get("COURSE_EXCHANGE_TOKEN") or os.environ.get("JUPYTERHUB_API_TOKEN")))


def on_a_hub() -> list[str]:
    """The variables of :data:`HUB_VARIABLES` set here: any one means a hub, where a hand-in file written
    locally never reaches the instructor (the hub trial: ``--student`` saved one and said "handed in")."""
    return [name for name in HUB_VARIABLES if os.environ.get(name)]


@dataclass
class Exchange:
    url: str        # ends with /services/course-exchange/
    token: str

    @classmethod
    def from_env(cls) -> Exchange:
        url = os.environ.get("COURSE_EXCHANGE_URL", "")
        token = os.environ.get("COURSE_EXCHANGE_TOKEN") or os.environ.get("JUPYTERHUB_API_TOKEN", "")
        if not url and token:
            raise ExchangeError("this is a JupyterHub session, but no course exchange is named for it (no "
                                "$COURSE_EXCHANGE_URL): the hub's administrator adds the exchange to the hub "
                                "(docs/hub-admins.md)")
        if url and not token:
            raise ExchangeError(f"no token for the exchange at {url}: a Lab terminal on the hub has "
                                "$JUPYTERHUB_API_TOKEN; elsewhere set $COURSE_EXCHANGE_TOKEN to a token made on the "
                                "hub's token page (/hub/token)")
        if not url or not token:
            raise ExchangeError("not in a hub session: no $COURSE_EXCHANGE_URL and $JUPYTERHUB_API_TOKEN (run this "
                                "in a terminal of your Lab on the class's hub, or hand in the single-machine way: "
                                "course submit FILE --student ID)")
        return cls(url if url.endswith("/") else url + "/", token)

    def _call(self, method: str, path: str, *, data=None, json=None, stream: bool = False, ok=(200, 201)):
        try:
            r = requests.request(method, self.url + path, data=data, json=json, stream=stream, timeout=TIMEOUT_S,
                                 headers={"Authorization": f"token {self.token}"})
        except requests.RequestException as exc:
            raise ExchangeError(f"the exchange at {self.url} did not answer: {exc}") from None
        if r.status_code not in ok:
            try:
                message = r.json().get("error") or r.text
            except ValueError:
                message = r.text.strip()[:300] or r.reason
            raise ExchangeError(f"{message} (HTTP {r.status_code})", r.status_code)
        return r

    # -- anyone ---------------------------------------------------------------------------------------
    def me(self) -> dict:
        return self._call("GET", "api/me").json()

    def course(self, wanted: str | None, *, instructor: bool = False, how: str = "--course") -> str:
        """``wanted``, or the caller's only course (the only one they teach, with ``instructor``)."""
        if wanted:
            return wanted
        me = self.me()
        courses = [c for c, role in me["courses"].items() if role == "instructor" or not instructor]
        if len(courses) == 1:
            return courses[0]
        if not courses:
            raise ExchangeError(f"{me['user']} is in no course{' as an instructor' if instructor else ''} on this hub "
                                "(ask for the hub group course-ID-students or course-ID-instructors)")
        raise ExchangeError(f"{me['user']} is in several courses ({', '.join(courses)}): say which with {how}")

    def deadlines(self, course: str) -> dict:
        return self._call("GET", f"api/courses/{quote(course)}/deadlines").json()["deadlines"]

    # -- a student ------------------------------------------------------------------------------------
    def hand_in(self, course: str, path: Path, data: bytes | None = None) -> dict:
        body = Path(path).read_bytes() if data is None else data
        name = quote(Path(path).name)
        return self._call("POST", f"api/courses/{quote(course)}/handins/{name}", data=body).json()

    def my_handins(self, course: str) -> dict:
        return self._call("GET", f"api/courses/{quote(course)}/handins").json()

    def my_feedback(self, course: str) -> dict | None:
        return self._call("GET", f"api/courses/{quote(course)}/feedback").json()["feedback"]

    def my_feedback_page(self, course: str, page: str) -> bytes:
        return self._call("GET", f"api/courses/{quote(course)}/feedback/{quote(page)}").content

    # -- an instructor --------------------------------------------------------------------------------
    def set_deadlines(self, course: str, deadlines: dict[str, str | None]) -> dict:
        return self._call("PUT", f"api/courses/{quote(course)}/deadlines", json=deadlines).json()["deadlines"]

    def collect(self, course: str) -> dict:
        return self._call("GET", f"api/courses/{quote(course)}/collect").json()

    def handin_file(self, course: str, handin_id: int) -> bytes:
        return self._call("GET", f"api/courses/{quote(course)}/handins/{int(handin_id)}/file").content

    def give_back(self, course: str, student: str, score: dict, pages: dict[str, str]) -> dict:
        return self._call("PUT", f"api/courses/{quote(course)}/returns/{quote(student, safe='')}",
                          json={"score": score, "pages": pages}).json()
