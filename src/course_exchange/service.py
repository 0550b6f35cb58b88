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
=======  ======================================  ==========  =================================================

Run by the hub: ``python -m course_exchange.service`` with ``COURSE_EXCHANGE_DIR`` (storage root) in its
environment and the hub's ``JUPYTERHUB_*`` variables.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlparse

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated, UserNotAllowed
from jupyterhub.utils import url_path_join
from tornado import httpclient, web
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop

from course_grader import api

from . import limits
from .courses import Role, course_id_problem, roles_from_groups
from .errors import (
    BadRequest,
    Forbidden,
    GraderRefuses,
    NotAllowedMethod,
    NotFound,
    NotSignedIn,
    Refused,
    TooLarge,
    TooMany,
)
from .store import Store

SERVICE_NAME = "course-exchange"
PAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.html\Z")
HANDIN_FILE = re.compile(r"^ex[0-9]{2}[A-Za-z0-9_-]{0,80}\.ipynb\Z")
FORBIDDEN_FIELDS = ("student", "user", "username")


class Exchange:
    """What the handlers share: the store, the grader's exercises, the hub client, the rate windows."""

    def __init__(self, root: Path, solutions: Path | None = None):
        self.store = Store(root)
        self.solutions = solutions
        self.exercises = {ex.name: ex for ex in api.exercises(solutions).values()}
        self.checks = ThreadPoolExecutor(limits.CHECK_WORKERS, thread_name_prefix="exchange-check")
        self.windows: dict[str, deque[float]] = {}
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


class Base(HubOAuthenticated, web.RequestHandler):
    """Identity from the hub (token, else OAuth cookie); refusals as JSON ``{"error": ...}``."""

    @property
    def exchange(self) -> Exchange:
        return self.settings["exchange"]

    def get_current_user(self):      # set by prepare(), never looked up synchronously on the loop
        return getattr(self, "_user", None)

    async def prepare(self):
        self._user = None
        for name in FORBIDDEN_FIELDS:
            if name in self.request.query_arguments:
                raise BadRequest(f"a {name!r} field is refused: the exchange takes who you are from the hub "
                                 "(your token or your login), never from the request")
        model = await self.hub_auth.get_user(self, sync=False)
        if model:
            try:
                model = self.check_hub_user(model)
            except UserNotAllowed:
                raise Forbidden(f"{model.get('kind', 'user')} {model.get('name')} may not use the exchange (the hub "
                                "gave it no access:services!service=course-exchange)") from None
        if model and model.get("kind", "user") == "user":
            self._user = model["name"]

    def me(self) -> str:
        if not self._user:
            raise NotSignedIn("not signed in: send your hub token (Authorization: token $JUPYTERHUB_API_TOKEN) "
                              "or log in to the hub")
        return self._user

    async def role_in(self, course: str) -> Role:
        if problem := course_id_problem(course):
            raise BadRequest(problem)
        roles = roles_from_groups(await self.exchange.groups_of(self.me()))
        if course not in roles:
            raise Forbidden(f"{self.me()} is not in course {course} (hub groups course-{course}-students or "
                            f"course-{course}-instructors)")
        return roles[course]

    async def as_student(self, course: str) -> str:
        """The caller's name, when they are a student (or instructor) of ``course``: their own things only."""
        await self.role_in(course)
        return self.me()

    async def as_instructor(self, course: str) -> str:
        if await self.role_in(course) is not Role.INSTRUCTOR:
            raise Forbidden(f"{self.me()} is not an instructor of course {course} (hub group "
                            f"course-{course}-instructors)")
        return self.me()

    def json_body(self, cap: int = limits.MAX_JSON_BYTES):
        if len(self.request.body) > cap:
            raise TooLarge(f"the body is {len(self.request.body)} bytes; at most {cap} here")
        try:
            body = json.loads(self.request.body or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        for name in FORBIDDEN_FIELDS:
            if name in body:
                raise BadRequest(f"a {name!r} field is refused: the exchange takes who you are from the hub")
        return body

    def reply(self, obj, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(obj, indent=1))

    def _handle_request_exception(self, e):
        if isinstance(e, Refused):
            if not self._finished:
                self.clear()
                self.reply({"error": str(e), "status": e.status}, e.status)
            return
        super()._handle_request_exception(e)

    def write_error(self, status_code, **kwargs):
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps({"error": self._reason, "status": status_code}))

    def _unsupported(self, *args, **kwargs):
        raise NotAllowedMethod(f"{self.request.method} is not supported on {self.request.path}")

    def get(self, *args, **kwargs):
        self._unsupported()

    def post(self, *args, **kwargs):
        self._unsupported()

    def put(self, *args, **kwargs):
        self._unsupported()

    def delete(self, *args, **kwargs):
        self._unsupported()

    def patch(self, *args, **kwargs):
        self._unsupported()


class MeHandler(Base):
    async def get(self):
        roles = roles_from_groups(await self.exchange.groups_of(self.me()))
        self.reply({"user": self.me(), "courses": {c: str(r) for c, r in sorted(roles.items())}})


@web.stream_request_body
class HandinUpload(Base):
    """POST api/courses/C/handins/FILE: the body (streamed, capped) is the notebook.

    A refusal is sent as soon as it is known (from the headers, or when the body passes the cap), and the
    rest of the body is then read and dropped for at most ``limits.LINGER_S`` before the connection is
    closed: closing at once, with the client still sending, resets the connection, and the hub's proxy
    then answers 503 instead of passing the refusal on. Nothing of a refused body is kept.
    """

    async def prepare(self):
        self._chunks: list[bytes] = []
        self._size = 0
        self._answered = False
        self.request.connection.set_max_body_size(1 << 40)    # the cap is data_received's, which answers 413
        try:
            await self.admit()
        except Refused as exc:
            self.answer_early(exc)

    async def admit(self) -> None:
        if self.request.method != "POST":
            raise NotAllowedMethod(f"{self.request.method} is not supported on {self.request.path}")
        length = self.request.headers.get("Content-Length")
        if length is not None:
            if not length.isdigit():
                raise BadRequest(f"Content-Length {length!r} is not a number")
            if int(length) > limits.MAX_UPLOAD_BYTES:
                raise TooLarge(f"the upload is {int(length)} bytes; a hand-in may be at most "
                               f"{limits.MAX_UPLOAD_BYTES} bytes (nothing was stored)")
        await super().prepare()
        course, file_name = self.path_args
        self.student = await self.as_student(course)
        self.ex = self.check_name(file_name)
        self.exchange.take_rate(self.student)
        count, size = self.exchange.store.usage(course, self.student)
        if count >= limits.MAX_HANDINS_PER_USER or size >= limits.MAX_STORED_BYTES_PER_USER:
            raise TooMany(f"your storage in course {course} is full ({count} hand-ins, {size} bytes; at most "
                          f"{limits.MAX_HANDINS_PER_USER} and {limits.MAX_STORED_BYTES_PER_USER} bytes): ask your "
                          "instructor (nothing was stored)")

    def answer_early(self, exc: Refused) -> None:
        body = json.dumps({"error": str(exc), "status": exc.status}, indent=1).encode()
        self.clear()
        self.set_status(exc.status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Content-Length", str(len(body)))
        self.set_header("Connection", "close")
        self.write(body)
        self.flush()
        self._answered = True
        self._chunks.clear()
        IOLoop.current().call_later(limits.LINGER_S, self.hang_up)

    def hang_up(self) -> None:
        if not self._finished:
            self.request.connection.close()

    def check_name(self, file_name: str) -> api.ExerciseInfo:
        if not HANDIN_FILE.fullmatch(file_name):
            raise BadRequest(f"{file_name!r}: a hand-in is named exNN_slug.ipynb (no folders, no '..')")
        stem = file_name.removesuffix(".ipynb")
        if stem not in self.exchange.exercises:
            known = ", ".join(sorted(self.exchange.exercises))
            raise BadRequest(f"{file_name}: no exercise of that name (known: {known})")
        return self.exchange.exercises[stem]

    def data_received(self, chunk: bytes):
        if self._answered:
            return                                   # dropped: the refusal is already on its way
        self._size += len(chunk)
        if self._size > limits.MAX_UPLOAD_BYTES:
            self.answer_early(TooLarge(f"the upload passed {limits.MAX_UPLOAD_BYTES} bytes, the most a hand-in "
                                       "may be (nothing was stored)"))
            return
        self._chunks.append(chunk)

    async def post(self, course, file_name):
        if self._answered:
            self.finish()                            # the whole body came before the linger ran out
            return
        data = b"".join(self._chunks)
        self._chunks.clear()
        loop = asyncio.get_running_loop()
        try:
            check = await loop.run_in_executor(
                self.exchange.checks, lambda: api.check_handin(data, self.student, self.ex.name + ".ipynb",
                                                               solutions=self.exchange.solutions))
        except api.HandinError as exc:
            raise BadRequest(str(exc)) from None
        if check.refused:
            raise GraderRefuses(f"refused: the grader would reject {file_name}: {check.refused}")
        h = self.exchange.store.add_handin(course, self.student, self.ex.id, self.ex.name, data, check.warnings)
        h = next(x for x in self.exchange.store.handins(course, self.student) if x.id == h.id)   # late? counts?
        self.reply({"handin": h.public(), "warnings": check.warnings}, 201)


class MyHandins(Base):
    async def get(self, course):
        me = await self.as_student(course)
        self.reply({"course": course, "deadlines": self.exchange.store.deadlines(course),
                    "handins": [h.public() for h in self.exchange.store.handins(course, me)]})


class Deadlines(Base):
    async def get(self, course):
        await self.as_student(course)
        self.reply({"course": course, "deadlines": self.exchange.store.deadlines(course)})

    async def put(self, course):
        me = await self.as_instructor(course)
        body = self.json_body()
        known = {ex.id for ex in self.exchange.exercises.values()}
        wanted: dict[str, str | None] = {}
        from datetime import datetime

        from .store import stamp
        for exercise, value in body.items():
            if exercise not in known:
                raise BadRequest(f"{exercise!r}: no such exercise (known: {', '.join(sorted(known))})")
            if value is None:
                wanted[exercise] = None
                continue
            try:
                t = datetime.fromisoformat(str(value))
            except ValueError:
                raise BadRequest(f"{exercise}: {value!r} is not an ISO 8601 time (2026-12-10T17:00+00:00)") from None
            if t.tzinfo is None:
                raise BadRequest(f"{exercise}: {value!r} has no time zone; say which (+00:00 for UTC)")
            wanted[exercise] = stamp(t)
        self.reply({"course": course, "deadlines": self.exchange.store.set_deadlines(course, wanted, me)})


class Collect(Base):
    async def get(self, course):
        await self.as_instructor(course)
        handins = self.exchange.store.handins(course)
        self.reply({"course": course, "deadlines": self.exchange.store.deadlines(course),
                    "counted": [h.public() for h in handins if h.counts],
                    "all": len(handins)})


class HandinFile(Base):
    async def get(self, course, hid):
        await self.as_instructor(course)
        try:
            h = self.exchange.store.handin(int(hid))
        except (TypeError, ValueError):
            raise NotFound(f"no hand-in {hid} in course {course}") from None
        if h.course != course:
            raise NotFound(f"no hand-in {hid} in course {course}")
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.set_header("X-Handin-Sha256", h.sha256)
        self.finish(self.exchange.store.handin_bytes(h))


class MyFeedback(Base):
    async def get(self, course, page=None):
        me = await self.as_student(course)
        fb = self.exchange.store.feedback(course, me)
        if page is None:
            self.reply({"course": course, "student": me,
                        "feedback": None if fb is None else {k: fb[k] for k in ("id", "returned", "score", "pages")}})
            return
        if not PAGE_NAME.fullmatch(page):
            raise BadRequest(f"{page!r}: not a feedback page name")
        data = self.exchange.store.feedback_page(course, me, page)
        if data is None:
            raise NotFound(f"no feedback page {page} for you in course {course}")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
        self.finish(data)


class FeedbackPage(MyFeedback):
    """The browser's way to a student's own pages: the hub's OAuth login, then the page."""

    async def get(self, course, page=None):
        if not self._user:
            self.redirect(self.get_login_url())
            return
        await super().get(course, page or "index.html")


class ReturnFeedback(Base):
    async def put(self, course, student):
        me = await self.as_instructor(course)
        if problem := api.student_id_problem(student):
            raise BadRequest(problem)
        if len(self.request.body) > limits.MAX_FEEDBACK_BYTES:
            raise TooLarge(f"the feedback is {len(self.request.body)} bytes; at most {limits.MAX_FEEDBACK_BYTES}")
        try:
            body = json.loads(self.request.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("pages"), dict) or not body["pages"]:
            raise BadRequest('the body must be {"score": {...}, "pages": {"index.html": "...", ...}}')
        score = body.get("score")
        if not isinstance(score, dict):
            raise BadRequest('"score" must be an object, e.g. {"total": 7, "possible": 10}')
        pages: dict[str, bytes] = {}
        for name, text in body["pages"].items():
            if not isinstance(name, str) or not PAGE_NAME.fullmatch(name) or not isinstance(text, str):
                raise BadRequest(f"{name!r}: a page is NAME.html (no folders, no '..') with HTML text")
            pages[name] = text.encode("utf-8")
        if "index.html" not in pages:
            raise BadRequest("the pages must include index.html")
        fb = self.exchange.store.add_return(course, student, score, pages, me)
        self.reply({"course": course, "student": student, "returned": fb["returned"], "pages": fb["pages"]}, 201)


class Fallback(Base):
    async def prepare(self):
        await super().prepare()
        raise NotFound(f"no such endpoint: {self.request.method} {self.request.path}")


def make_app(exchange: Exchange, prefix: str) -> web.Application:
    p = prefix.rstrip("/")
    course = r"([^/]+)"
    routes = [
        (rf"{p}/api/me", MeHandler),
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
    return web.Application(routes, exchange=exchange, cookie_secret=os.urandom(32))


def main() -> None:
    root = Path(os.environ.get("COURSE_EXCHANGE_DIR") or "exchange-storage")
    os.umask(0o077)
    exchange = Exchange(root)
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE_NAME}/")
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:18010"))
    app = make_app(exchange, prefix)
    server = HTTPServer(app, max_body_size=limits.MAX_FEEDBACK_BYTES + 1, max_buffer_size=limits.MAX_FEEDBACK_BYTES + 1)
    server.listen(url.port, url.hostname or "127.0.0.1")
    print(f"course-exchange: serving {root} at {url.geturl()}{prefix.lstrip('/')}", flush=True)
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
