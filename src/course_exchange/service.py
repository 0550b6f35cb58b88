"""The exchange service: a tornado application that JupyterHub runs as the managed service ``course-exchange``.

Who is calling comes from the hub only: a hub token in ``Authorization: token ...`` (Lab's terminal has
``$JUPYTERHUB_API_TOKEN``) or the hub's OAuth cookie for a browser (``HubOAuth``, with its XSRF check for
anything but a page view). What courses they are in comes from the hub too: their groups (see
:mod:`.courses`), which the service reads with its own token (role scope ``read:users:groups``). A name
typed in a request is never an identity: a ``student`` field in a query or body is refused.

Endpoints, under the service's prefix (``/services/course-exchange/``); ``C`` is a course id:

=======  ======================================  ==========  =================================================
method   path                                    who         what
=======  ======================================  ==========  =================================================
GET      api/me                                  anyone      your name and your role in each course
POST     api/courses/C/handins/FILE              student     hand in (the body is the notebook, FILE its name)
GET      api/courses/C/handins                   student     your hand-ins (time, sha256, late, which counts)
GET      api/courses/C/deadlines                 member      the course's deadlines
PUT      api/courses/C/deadlines                 instructor  set deadlines ``{"ex02": "ISO time" or null}``
GET      api/courses/C/feedback                  student     your latest feedback: score and page names
GET      api/courses/C/feedback/PAGE             student     one of your pages (HTML)
GET      courses/C/feedback/[PAGE]               student     the same, for a browser (OAuth login)
GET      api/courses/C/collect                   instructor  the hand-ins that count, one per student+exercise
GET      api/courses/C/handins/ID/file           instructor  the bytes of hand-in ID
PUT      api/courses/C/returns/STUDENT           instructor  return ``{"score": {...}, "pages": {name: html}}``
GET      lti/jwks.json                           anyone      the LTI tool's public keys (:mod:`.ags.jwks`)
=======  ======================================  ==========  =================================================

Run by the hub: ``python -m course_exchange.service`` with ``COURSE_EXCHANGE_DIR`` (storage root) in its
environment and the hub's ``JUPYTERHUB_*`` variables.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlparse

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler
from jupyterhub.utils import url_path_join
from tornado import httpclient, web
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop

from course_grader import api

from . import limits
from .ags.jwks import JwksHandler
from .courses import roles_from_groups
from .errors import NotFound, TooMany
from .feedback import FeedbackPage, MyFeedback, ReturnFeedback
from .handins import Collect, Deadlines, HandinFile, HandinUpload, MyHandins
from .handler_base import Base
from .store import Store

SERVICE_NAME = "course-exchange"


class Exchange:
    """What the handlers share: the store, the grader's exercises, the hub client, the rate windows and
    the hand-ins in flight."""

    def __init__(self, root: Path, solutions: Path | None = None):
        self.store = Store(root)
        self.solutions = solutions
        self.exercises = {ex.name: ex for ex in api.exercises(solutions).values()}
        self.checks = ThreadPoolExecutor(limits.CHECK_WORKERS, thread_name_prefix="exchange-check")
        self.windows: dict[str, deque[float]] = {}
        self.in_flight: dict[str, int] = {}
        self.groups: dict[str, tuple[float, list[str]]] = {}
        self.hub_api = os.environ.get("JUPYTERHUB_API_URL", "").rstrip("/")
        self.token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
        self.http = httpclient.AsyncHTTPClient()
        # the grader's first check imports its whole pipeline (many seconds): do it now, not for a student
        self.checks.submit(self.warm_up)

    def warm_up(self) -> None:
        name = next(iter(self.exercises), None)
        if name:
            api.check_handin(b"{}", "warm-up", name + ".ipynb", solutions=self.solutions)

    def take_rate(self, user: str) -> None:
        """One hand-in attempt by ``user`` in the sliding window, or TooMany."""
        window = self.windows.setdefault(user, deque())
        t = time.monotonic()
        while window and window[0] <= t - limits.RATE_WINDOW_S:
            window.popleft()
        if len(window) >= limits.RATE_HANDINS:
            wait = int(window[0] + limits.RATE_WINDOW_S - t) + 1
            raise TooMany(f"too many hand-ins: at most {limits.RATE_HANDINS} in {limits.RATE_WINDOW_S:.0f} s; "
                          f"try again in {wait} s (nothing was stored)")
        window.append(t)

    def hold_upload(self, user: str) -> None:
        """One more hand-in of ``user`` being received or checked, or TooMany: one user's uploads never hold
        more than a few bodies in memory nor every one of the grader's check threads."""
        if self.in_flight.get(user, 0) >= limits.UPLOADS_IN_FLIGHT_PER_USER:
            raise TooMany(f"too many hand-ins at once: at most {limits.UPLOADS_IN_FLIGHT_PER_USER} of yours may be "
                          "on their way or being checked; wait for them to finish (nothing was stored)")
        self.in_flight[user] = self.in_flight.get(user, 0) + 1

    def release_upload(self, user: str) -> None:
        left = self.in_flight.get(user, 0) - 1
        if left > 0:
            self.in_flight[user] = left
        else:
            self.in_flight.pop(user, None)

    async def groups_of(self, user: str) -> list[str]:
        """The user's hub groups, asked of the hub with the service's own token (cached a few seconds)."""
        cached = self.groups.get(user)
        if cached and time.monotonic() - cached[0] < limits.GROUPS_CACHE_S:
            return cached[1]
        url = f"{self.hub_api}/users/{quote(user, safe='')}"
        resp = await self.http.fetch(url, headers={"Authorization": f"token {self.token}"}, raise_error=False)
        if resp.code == 404:
            groups: list[str] = []
        elif resp.code != 200:
            raise web.HTTPError(502, f"the hub did not answer about {user}'s groups ({resp.code})")
        else:
            groups = list(json.loads(resp.body).get("groups") or [])
        self.groups[user] = (time.monotonic(), groups)
        return groups


class MeHandler(Base):
    async def on_get(self):
        roles = roles_from_groups(await self.exchange.groups_of(self.me()))
        self.reply({"user": self.me(), "courses": {c: str(r) for c, r in sorted(roles.items())}})


class Fallback(Base):
    async def admit(self, *args) -> None:
        raise NotFound(f"no such endpoint: {self.request.method} {self.request.path}")

    async def on_get(self):     # never reached: admit refuses every request
        raise NotFound(f"no such endpoint: {self.request.method} {self.request.path}")

    on_post = on_put = on_delete = on_patch = on_get


def make_app(exchange: Exchange, prefix: str) -> web.Application:
    p = prefix.rstrip("/")
    course = r"([^/]+)"
    routes = [
        (rf"{p}/api/me", MeHandler),
        (rf"{p}/lti/jwks\.json", JwksHandler),
        (rf"{p}/api/courses/{course}/handins", MyHandins),
        (rf"{p}/api/courses/{course}/handins/([0-9]+)/file", HandinFile),
        (rf"{p}/api/courses/{course}/handins/([^/]*)", HandinUpload),
        (rf"{p}/api/courses/{course}/deadlines", Deadlines),
        (rf"{p}/api/courses/{course}/collect", Collect),
        (rf"{p}/api/courses/{course}/feedback", MyFeedback),
        (rf"{p}/api/courses/{course}/feedback/([^/]+\.html)", MyFeedback),
        (rf"{p}/api/courses/{course}/returns/([^/]+)", ReturnFeedback),
        (rf"{p}/courses/{course}/feedback/?", FeedbackPage),
        (rf"{p}/courses/{course}/feedback/([^/]+)", FeedbackPage),
        (url_path_join(p, "oauth_callback"), HubOAuthCallbackHandler),
        (rf"{p}/.*", Fallback),
    ]
    # the hub's answer about a token is reused for AUTH_CACHE_S (JupyterHub's default is 300 s): a token the
    # hub has revoked (a stopped server's, one deleted on the token page) stops working within seconds
    HubOAuth.instance(cache_max_age=int(limits.AUTH_CACHE_S))
    return web.Application(routes, exchange=exchange, cookie_secret=os.urandom(32))


def served_at(service_url: str, prefix: str) -> str:
    """The service's own address as its start-up line prints it: the hub gives ``JUPYTERHUB_SERVICE_URL``
    without a trailing ``/`` and the prefix with a leading one; exactly one ``/`` goes between them."""
    return f"{service_url.rstrip('/')}/{prefix.strip('/')}/"


def main() -> None:
    root = Path(os.environ.get("COURSE_EXCHANGE_DIR") or "exchange-storage")
    os.umask(0o077)
    exchange = Exchange(root)
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE_NAME}/")
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:18010"))
    app = make_app(exchange, prefix)
    server = HTTPServer(app, max_buffer_size=1 << 20)    # each endpoint caps its own body (handler_base)
    server.listen(url.port, url.hostname or "127.0.0.1")
    print(f"course-exchange: serving {root} at {served_at(url.geturl(), prefix)}", flush=True)
    loop = IOLoop.current()

    def stop(signum, frame):    # the hub stops a managed service with SIGINT, then SIGTERM
        loop.add_callback_from_signal(loop.stop)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    loop.start()
    server.stop()
    exchange.checks.shutdown(cancel_futures=True)
    exchange.store.close()


if __name__ == "__main__":
    main()
