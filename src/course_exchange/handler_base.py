"""What every endpoint of the exchange does before its own work: who is calling, may they send this, and
how a refusal is said.

Every handler is a tornado *streaming* handler, so nothing of a request's body is read before the caller
is known and admitted. In order, before one byte of the body is taken:

1. a body larger than the endpoint's cap (``body_cap``; 0 for endpoints that take none) is refused from
   ``Content-Length``; a ``student``/``user``/``username`` query field is refused;
2. the caller is found from the hub (token, else OAuth cookie with its XSRF check, see
   :mod:`.service`); a request that carries a body must come from a signed-in user;
3. the endpoint's ``admit`` decides (member, instructor, rate, storage).

A refusal at any step is answered at once; the rest of the body is then read and dropped for at most
``limits.LINGER_S`` before the connection is closed (closing at once, with the client still sending,
resets the connection, and the hub's proxy then answers 503 instead of passing the refusal on). A body
that grows past the cap while it streams is refused the same way. So an unknown caller cannot make the
service hold any body, and a known one at most the cap of an endpoint they were admitted to.

Why not tornado's own ``max_body_size``: a non-streaming handler's body is read whole before any check,
and tornado refuses an over-long one by closing the connection, with no words a client can show.
"""

from __future__ import annotations

import json

from jupyterhub.services.auth import HubOAuthenticated, UserNotAllowed
from tornado import web
from tornado.ioloop import IOLoop

from . import limits
from .courses import Role, course_id_problem, roles_from_groups
from .errors import BadRequest, Forbidden, NotAllowedMethod, NotSignedIn, Refused, TooLarge

FORBIDDEN_FIELDS = ("student", "user", "username")
BODY_METHODS = ("POST", "PUT", "PATCH")
VERBS = ("get", "post", "put", "delete", "patch")
UNLIMITED = 1 << 40        # tornado's own cap, set out of the way: the endpoint's cap answers instead


@web.stream_request_body
class Base(HubOAuthenticated, web.RequestHandler):
    """Identity from the hub, admission before the body, refusals as JSON ``{"error": ..., "status": N}``.

    A subclass implements ``on_get`` / ``on_post`` / ... (a verb it lacks is 405), sets ``body_cap`` when
    it takes a body (``body_what`` names it in a refusal), and may override ``admit(*path_args)``."""

    body_cap = 0
    body_what = "a request here"

    @property
    def exchange(self):
        return self.settings["exchange"]

    def get_current_user(self):      # set by prepare(), never looked up synchronously on the loop
        return getattr(self, "_user", None)

    # -- before the body ------------------------------------------------------------------------------
    async def prepare(self):
        self._user = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._answered = False
        self.request.connection.set_max_body_size(UNLIMITED)
        try:
            self.check_declared_length()
            await self.identify()
            if self.request.method in BODY_METHODS:
                self.me()
            if not hasattr(self, "on_" + self.request.method.lower()):
                raise NotAllowedMethod(f"{self.request.method} is not supported on {self.request.path}")
            await self.admit(*self.path_args)
        except Refused as exc:
            self.answer_early(exc)

    def cap(self) -> int:
        return self.body_cap if self.request.method in BODY_METHODS else 0

    def check_declared_length(self) -> None:
        length = self.request.headers.get("Content-Length")
        if length is None:
            return
        if not length.isdigit():
            raise BadRequest(f"Content-Length {length!r} is not a number")
        if int(length) > self.cap():
            raise TooLarge(self.too_large(f"is {int(length)} bytes"))

    def too_large(self, how: str) -> str:
        if not self.cap():
            return f"the body {how}; a {self.request.method} here takes none (nothing was stored)"
        return f"the body {how}; {self.body_what} may be at most {self.cap()} bytes (nothing was stored)"

    async def identify(self) -> None:
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

    async def admit(self, *path_args) -> None:
        """The endpoint's own check, before its body is read (default: none)."""

    # -- the body -------------------------------------------------------------------------------------
    def data_received(self, chunk: bytes):
        if self._answered:
            return                                   # dropped: the refusal is already on its way
        self._size += len(chunk)
        if self._size > self.cap():
            self.answer_early(TooLarge(self.too_large(f"passed {self.cap()} bytes")))
            return
        self._chunks.append(chunk)

    @property
    def body(self) -> bytes:
        return b"".join(self._chunks)

    def json_body(self):
        try:
            body = json.loads(self.body or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        for name in FORBIDDEN_FIELDS:
            if name in body:
                raise BadRequest(f"a {name!r} field is refused: the exchange takes who you are from the hub")
        return body

    # -- who, in which course -------------------------------------------------------------------------
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

    # -- answers --------------------------------------------------------------------------------------
    def reply(self, obj, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(obj, indent=1))

    def answer_early(self, exc: Refused) -> None:
        """Send the refusal now; drop whatever body is still coming, and hang up after the linger."""
        body = json.dumps({"error": str(exc), "status": exc.status}, indent=1).encode()
        self.clear()
        self.set_status(exc.status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Content-Length", str(len(body)))
        self.set_header("Cache-Control", "no-store")
        # tornado closes a connection whose handler finished before its body was read, and a streaming
        # handler's body is never read yet here: said in the answer, or the proxy reuses the closed connection
        # for its next request and answers that one 503
        self.set_header("Connection", "close")
        self._answered = True
        self._chunks.clear()
        if not self.body_may_follow():
            self.finish(body)
            return
        self.write(body)
        self.flush()
        IOLoop.current().call_later(limits.LINGER_S, self.hang_up)

    def body_may_follow(self) -> bool:
        h = self.request.headers
        return h.get("Content-Length", "0") != "0" or "chunked" in h.get("Transfer-Encoding", "").lower()

    def hang_up(self) -> None:
        if not self._finished:
            self.request.connection.close()

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

    async def dispatch(self, verb: str, args) -> None:
        if self._answered:
            if not self._finished:
                self.finish()                        # the whole body came before the linger ran out
            return
        handler = getattr(self, "on_" + verb, None)
        if handler is None:
            raise NotAllowedMethod(f"{self.request.method} is not supported on {self.request.path}")
        await handler(*args)

    async def get(self, *args):
        await self.dispatch("get", args)

    async def post(self, *args):
        await self.dispatch("post", args)

    async def put(self, *args):
        await self.dispatch("put", args)

    async def delete(self, *args):
        await self.dispatch("delete", args)

    async def patch(self, *args):
        await self.dispatch("patch", args)
