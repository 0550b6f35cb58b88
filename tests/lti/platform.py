"""A real LTI 1.3 platform on 127.0.0.1 for tests: ``lti1p3platform`` (PyPI) served by FastAPI and uvicorn.

An LMS's side of LTI 1.3 and LTI Advantage AGS, built from ``lti1p3platform`` (the platform half of
LTI 1.3, with FastAPI bindings): its ``Registration`` signs every launch with RS256 under the kid
of its own key, its ``OIDCLogin`` starts the third-party-initiated login, its message launch
builds the id_token's claims, its ``get_access_token`` grants OAuth2 client-credentials tokens
after checking the tool's client assertion against the TOOL's JWKS URL, and its
``AssignmentsGradesService`` authenticates each AGS call and answers it. What is written here is
what a platform must supply to that library: the routes, an in-memory store for line items and
scores, the key (made at start, 2048-bit RSA) and the page an LMS user clicks.

Written here, and why:
- the auto-submitting launch form: the library's FastAPI launch class renders its template through
  ``pkg_resources``, which setuptools 81 and later no longer ship, so it cannot be imported; the
  form is the same (POST id_token and state to the tool's redirect_uri), rendered with Jinja2;
- the redirect_uri check at the auth endpoint (a platform must only post to a URI the tool
  registered; the library does not check it);
- the gradebook behind the library's AGS service, in tests/lti/gradebook.py: each AGS route asks for
  its own scope (a score POST needs .../scope/score, a results GET .../scope/result.readonly; the
  library's service accepts a token with any AGS scope for any call), and the score checks the
  library leaves as a TODO (userId, timestamp, activityProgress, gradingProgress, scoreGiven only
  with scoreMaximum; an older timestamp is refused with 409).

API (tests/lti/platform.py; import as ``from lti.platform import Platform, Flaw``)::

    platform = Platform().start()            # port=0: a free port on 127.0.0.1; .stop() ends it
    platform.issuer                          # "http://127.0.0.1:PORT" (also its base URL)
    platform.auth_url, platform.token_url, platform.jwks_url
    platform.lineitems_url(context_id)       # the AGS line-items URL of one context
    platform.register_tool(client_id=..., deployment_id=..., login_url=..., redirect_uris=[...],
                           jwks_url=..., target_link_uri=None)   # target_link_uri: default redirect_uris[0]
    url = platform.launch_url("alice", ["Learner"], "ctx-1", "Compile contracts", "rl-1",
                              name=None, email=None, flaw=None)
        # a course page of the LMS with one link (id "launch") that starts the launch; roles are
        # LIS names (Learner, Instructor, TeachingAssistant, Mentor, ...) or full role URIs
    platform.start_url(...)                  # same arguments: the link itself (an HTTP client's start)
    platform.forms                           # every launch form the platform answered: {"action", "fields"}
    platform.lineitems(context_id)           # the line items of a context, as the AGS GET gives them
    platform.results(context_id, lineitem_id)   # {userId: result} of one line item
    platform.scores(context_id)              # every score POST accepted, in order: (lineitem id, score)
    platform.fail_next(count, status=503, path_part="/scores")   # the next COUNT matching calls fail
    platform.hang_next(count, seconds, path_part="/scores")      # ... answer only after SECONDS
    platform.expire_access_tokens()          # every token granted so far is refused from now on (401)

Bad launches (``flaw=Flaw.X``), each made by changing what the platform itself does, never by a
token written by hand:

    WRONG_ISSUER            the launch is signed by this platform's key with another issuer
    WRONG_AUDIENCE          the token's aud and azp name another tool's client id
    EXPIRED                 signed with an expiry in the past (the library's id_token_expiration < 0)
    NOT_YET_VALID           an nbf claim ten minutes ahead
    BAD_SIGNATURE           signed by another RSA key under the published key's kid
    UNREGISTERED_DEPLOYMENT another deployment id, in the login initiation and the token
    NO_ROLES                the roles claim is left out of the token
    NO_STATE                the launch form carries no state
    WRONG_STATE             the launch form carries a state the tool never issued

A replayed launch needs no flaw: post ``platform.forms[-1]`` again (with the browser's cookies).
"""

from __future__ import annotations

import asyncio
import copy
import enum
import json
import secrets
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import parse_qsl

import jwt
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment
from jwcrypto.jwk import JWK
from lti1p3platform import exceptions as lti_errors
from lti1p3platform.framework.fastapi.oidc_login import FastAPIOIDCLogin
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as LtiRequest

from .gradebook import AGS_LINEITEM, AGS_LINEITEM_READ, AGS_RESULT_READ, AGS_SCORE, Context, Grades

KEY_BITS = 2048
START_TIMEOUT = 30.0
LIS = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
# LTI 1.3 A.2.3.1: TeachingAssistant is a sub-role of Instructor
ROLE_URIS = {"TeachingAssistant": "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"}
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
NOT_YET_VALID_BY = 600   # seconds: the nbf of a NOT_YET_VALID launch
EXPIRED_BY = -120        # seconds: the id_token_expiration of an EXPIRED launch

LAUNCH_FORM = Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>LTI launch</title></head>
<body><form method="POST" action="{{ action }}" id="form">
{% for name, value in fields.items() %}<input type="hidden" name="{{ name }}" value="{{ value }}">
{% endfor %}</form>
<script>document.getElementById("form").submit();</script>
<noscript>Please enable JavaScript to open the tool.</noscript></body></html>""")

COURSE_PAGE = Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }} (test LMS)</title></head>
<body><h1>{{ title }}</h1><p>Signed in to the test LMS as {{ user }} ({{ roles }}).</p>
<p><a id="launch" href="{{ start }}">Open the course in JupyterHub</a></p></body></html>""")


class Flaw(enum.StrEnum):
    """A bad launch the platform can make (see the module docstring)."""

    WRONG_ISSUER = "wrong-issuer"
    WRONG_AUDIENCE = "wrong-audience"
    EXPIRED = "expired"
    NOT_YET_VALID = "not-yet-valid"
    BAD_SIGNATURE = "bad-signature"
    UNREGISTERED_DEPLOYMENT = "unregistered-deployment"
    NO_ROLES = "no-roles"
    NO_STATE = "no-state"
    WRONG_STATE = "wrong-state"


@dataclass(frozen=True)
class Tool:
    """What the tool registered with the platform (an LMS's developer key / tool configuration)."""

    client_id: str
    deployment_id: str
    login_url: str
    redirect_uris: tuple[str, ...]
    jwks_url: str
    target_link_uri: str


@dataclass(frozen=True)
class LaunchSpec:
    user: str
    roles: tuple[str, ...]
    context_id: str
    context_title: str
    resource_link_id: str
    name: str | None = None
    email: str | None = None
    flaw: Flaw | None = None


def new_private_key() -> str:
    return JWK.generate(kty="RSA", size=KEY_BITS).export_to_pem(private_key=True, password=None).decode()


def role_uri(role: str) -> str:
    if "://" in role:
        return role
    return ROLE_URIS.get(role, LIS + role)


class PlatformRegistration(Registration):
    """The library's registration; its access tokens carry a jti, so no two are the same string (the
    library's alone are equal within one second, and one could not be expired without the other)."""

    def encode_and_sign(self, payload, private_key, headers=None, expiration=None):
        return Registration.encode_and_sign({**payload, "jti": uuid.uuid4().hex}, private_key, headers, expiration)


class ForgedRegistration(PlatformRegistration):
    """Signs with another key, under the kid of the key the platform publishes (Flaw.BAD_SIGNATURE)."""

    def __init__(self, published_kid: str, forging_key: str) -> None:
        self._published_kid, self._forging_key = published_kid, forging_key

    def get_kid(self) -> str:
        return self._published_kid

    def get_platform_private_key(self) -> str:
        return self._forging_key


class PlatformConfig(LTI1P3PlatformConfAbstract):
    """The library's platform configuration, one registration, and tokens that can be expired."""

    def init_platform_config(self, registration: Registration, expired_tokens: set[str]) -> None:
        self._registration = registration
        self._expired_tokens = expired_tokens

    def get_registration_by_params(self, **kwargs) -> Registration:
        return self._registration

    def validate_token(self, token, allowed_scopes=None, audience=None) -> bool:
        if token in self._expired_tokens:
            raise lti_errors.LtiServiceException("access token expired", 401)
        try:
            return super().validate_token(token, allowed_scopes, audience)
        except (jwt.PyJWTError, lti_errors.LtiException) as exc:
            raise lti_errors.LtiServiceException(f"invalid access token: {exc}", 401) from exc


class Launch(LTIAdvantageMessageLaunchAbstract):
    """The library's LTI Advantage launch, with this platform's form and its flaws."""

    def __init__(self, request, platform_config, *, spec: LaunchSpec, preflight: dict, forms: list) -> None:
        super().__init__(request, platform_config)
        self._spec, self._preflight, self._forms = spec, preflight, forms

    def get_preflight_response(self) -> dict:
        return self._preflight

    def get_launch_message(self, include_extra_claims: bool = True) -> dict:
        message = super().get_launch_message(include_extra_claims)
        if self._spec.flaw is Flaw.NO_ROLES:
            message.pop(ROLES_CLAIM, None)
        return message

    def get_launch_data(self):
        message, state = super().get_launch_data()
        if self._spec.flaw is Flaw.NO_STATE:
            state = None
        elif self._spec.flaw is Flaw.WRONG_STATE:
            state = secrets.token_urlsafe(32)
        return message, state

    def render_launch_form(self, launch_data: dict, **kwargs) -> HTMLResponse:
        fields = {"id_token": launch_data["id_token"]}
        if launch_data.get("state") is not None:
            fields["state"] = launch_data["state"]
        self._forms.append({"action": launch_data["launch_url"], "fields": dict(fields)})
        return HTMLResponse(LAUNCH_FORM.render(action=launch_data["launch_url"], fields=fields))


class Platform:
    """One LMS on 127.0.0.1 (see the module docstring for the API)."""

    def __init__(self) -> None:
        self._key = new_private_key()
        self._public_key = JWK.from_pem(self._key.encode()).export_to_pem().decode()
        self._forging_key = new_private_key()
        self._tool: Tool | None = None
        self._launches: dict[str, LaunchSpec] = {}
        self._contexts: dict[str, Context] = {}
        self._expired_tokens: set[str] = set()
        self._granted_tokens: set[str] = set()
        self._faults: list[dict] = []
        self._lock = threading.RLock()        # the server's thread and the test's
        self.forms: list[dict] = []
        self.issuer = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = self._build_app()

    # ---- life ----------------------------------------------------------------------------------------
    def start(self, port: int = 0) -> Platform:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="lti-platform", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the LTI platform did not start on {self.issuer}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=START_TIMEOUT)
            self._server = None

    def __enter__(self) -> Platform:
        return self.start() if self._server is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- addresses -----------------------------------------------------------------------------------
    @property
    def auth_url(self) -> str:
        return f"{self.issuer}/auth"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def lineitems_url(self, context_id: str) -> str:
        return f"{self.issuer}/ags/{context_id}/lineitems"

    # ---- set-up --------------------------------------------------------------------------------------
    def register_tool(self, *, client_id: str, deployment_id: str, login_url: str, redirect_uris,
                      jwks_url: str, target_link_uri: str | None = None) -> Tool:
        uris = (redirect_uris,) if isinstance(redirect_uris, str) else tuple(redirect_uris)
        self._tool = Tool(client_id, deployment_id, login_url, uris, jwks_url, target_link_uri or uris[0])
        return self._tool

    def start_url(self, user: str, roles, context_id: str, context_title: str, resource_link_id: str, *,
                  name: str | None = None, email: str | None = None, flaw: Flaw | None = None) -> str:
        hint = uuid.uuid4().hex
        self._launches[hint] = LaunchSpec(user, tuple(role_uri(r) for r in roles), context_id, context_title,
                                          resource_link_id, name, email, Flaw(flaw) if flaw else None)
        return f"{self.issuer}/launch/{hint}/start"

    def launch_url(self, *args, **kwargs) -> str:
        return self.start_url(*args, **kwargs).removesuffix("/start")

    # ---- what the LMS holds --------------------------------------------------------------------------
    def _context(self, context_id: str) -> Context:
        with self._lock:
            return self._contexts.setdefault(context_id, Context())

    def lineitems(self, context_id: str) -> list[dict]:
        with self._lock:
            return copy.deepcopy(list(self._context(context_id).lineitems.values()))

    def results(self, context_id: str, lineitem_id: str) -> dict[str, dict]:
        key = lineitem_id.rstrip("/").rsplit("/", 1)[-1]
        with self._lock:
            return copy.deepcopy(self._context(context_id).results.get(key, {}))

    def scores(self, context_id: str) -> list[tuple[str, dict]]:
        with self._lock:
            return copy.deepcopy(self._context(context_id).scores)

    # ---- faults --------------------------------------------------------------------------------------
    def fail_next(self, count: int, status: int = 503, path_part: str = "/scores") -> None:
        with self._lock:
            self._faults.append({"left": count, "status": status, "path": path_part, "hang": 0.0})

    def hang_next(self, count: int, seconds: float, path_part: str = "/scores") -> None:
        with self._lock:
            self._faults.append({"left": count, "status": None, "path": path_part, "hang": seconds})

    def expire_access_tokens(self) -> None:
        with self._lock:
            self._expired_tokens |= self._granted_tokens

    def _take_fault(self, path: str) -> dict | None:
        with self._lock:
            for fault in self._faults:
                if fault["left"] > 0 and fault["path"] in path:
                    fault["left"] -= 1
                    return dict(fault)
        return None

    # ---- the library's objects, one launch or call at a time -----------------------------------------
    def _registration(self, flaw: Flaw | None = None) -> Registration:
        tool = self._require_tool()
        if flaw is Flaw.BAD_SIGNATURE:
            registration = ForgedRegistration(Registration.get_jwk(self._public_key)["kid"], self._forging_key)
        else:
            registration = PlatformRegistration().set_platform_private_key(self._key)
        registration.set_platform_public_key(self._public_key)
        registration.set_iss(self.issuer + ("/another-platform" if flaw is Flaw.WRONG_ISSUER else ""))
        registration.set_client_id(tool.client_id)
        registration.set_deployment_id("unregistered-deployment" if flaw is Flaw.UNREGISTERED_DEPLOYMENT
                                       else tool.deployment_id)
        registration.set_oidc_login_url(tool.login_url)
        registration.set_launch_url(tool.target_link_uri)
        registration.set_tool_key_set_url(tool.jwks_url)
        return registration

    def _config(self, flaw: Flaw | None = None) -> PlatformConfig:
        return PlatformConfig(registration=self._registration(flaw), expired_tokens=self._expired_tokens)

    def _require_tool(self) -> Tool:
        if self._tool is None:
            raise RuntimeError("no tool registered: call Platform.register_tool first")
        return self._tool

    def _launch(self, preflight: dict) -> Response:
        tool = self._require_tool()
        spec = self._launches.get(preflight.get("lti_message_hint", ""))
        if spec is None:
            return HTMLResponse("unknown or missing lti_message_hint", status_code=400)
        if preflight.get("login_hint") != spec.user:
            return HTMLResponse("login_hint is not the user who started this launch", status_code=400)
        if preflight.get("redirect_uri") not in tool.redirect_uris:
            return HTMLResponse(f"redirect_uri {preflight.get('redirect_uri')!r} is not registered",
                                status_code=400)
        for key, wanted in (("response_type", "id_token"), ("response_mode", "form_post"), ("scope", "openid")):
            if preflight.get(key) != wanted:
                return HTMLResponse(f"{key} must be {wanted}", status_code=400)
        launch = Launch(None, self._config(spec.flaw), spec=spec, preflight=preflight, forms=self.forms)
        launch.set_user_data(spec.user, list(spec.roles), full_name=spec.name, email_address=spec.email)
        launch.set_resource_link_claim(spec.resource_link_id, title=spec.context_title)
        launch.set_launch_context_claim(spec.context_id, context_title=spec.context_title,
                                        context_types=["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"])
        launch.set_ags(lineitems_url=self.lineitems_url(spec.context_id), allow_creating_lineitems=True)
        if spec.flaw is Flaw.EXPIRED:
            launch.set_id_token_expiration(EXPIRED_BY)
        elif spec.flaw is Flaw.NOT_YET_VALID:
            launch.set_extra_claims({"nbf": int(time.time()) + NOT_YET_VALID_BY})
        elif spec.flaw is Flaw.WRONG_AUDIENCE:
            launch.set_extra_claims({"aud": "another-tool", "azp": "another-tool"})
        try:
            return launch.lti_launch()
        except lti_errors.PreflightRequestValidationException:
            return HTMLResponse("bad authentication request (nonce, state, redirect_uri or client_id)",
                                status_code=400)

    def _token(self, form: dict) -> Response:
        config = self._config()
        if form.get("client_assertion_type") != CLIENT_ASSERTION_TYPE:
            return JSONResponse({"error": "invalid_request",
                                 "error_description": f"client_assertion_type must be {CLIENT_ASSERTION_TYPE}"},
                                status_code=400)
        try:
            claims = config.tool_validate_and_decode(form.get("client_assertion", ""))
            if claims.get("sub") != self._require_tool().client_id:
                raise lti_errors.LtiException("the client assertion's sub is not the tool's client id")
            granted = config.get_access_token(form)
        except (lti_errors.MissingRequiredClaim, lti_errors.UnsupportedGrantType) as exc:
            return JSONResponse({"error": "invalid_request", "error_description": str(exc) or type(exc).__name__},
                                status_code=400)
        except (lti_errors.LtiException, jwt.PyJWTError) as exc:
            return JSONResponse({"error": "invalid_client", "error_description": str(exc)}, status_code=401)
        with self._lock:
            self._granted_tokens.add(granted["access_token"])
        return JSONResponse(granted)

    def _ags(self, request_data: dict, context_id: str, scopes: list[str], call: str, **args) -> Response:
        lineitem_url = f"{self.lineitems_url(context_id)}/{args['line_item_id']}" if "line_item_id" in args else None
        service = Grades(LtiRequestData(request_data), self._config(), context=self._context(context_id),
                         lineitems_url=self.lineitems_url(context_id), scopes=scopes, lineitem_url=lineitem_url)
        with self._lock:
            answer = service.handle_resp(getattr(service, call), **args)
        if answer.code >= 400:
            return JSONResponse({"error": answer.message}, status_code=answer.code)
        if answer.code == 204:
            return Response(status_code=204)
        body = answer.result
        if call == "handle_get_lineitems":
            body = body["content"]
        elif call == "handle_get_results":
            body = body["content"]
        return JSONResponse(body, status_code=answer.code, media_type=answer.media_type)

    # ---- routes --------------------------------------------------------------------------------------
    def _build_app(self) -> FastAPI:
        app = FastAPI(title="test LMS (lti1p3platform)", docs_url=None, redoc_url=None, openapi_url=None)
        platform = self

        @app.middleware("http")
        async def faults(request: Request, call_next):
            fault = platform._take_fault(request.url.path)
            if fault and fault["hang"]:
                await asyncio.sleep(fault["hang"])
            elif fault:
                return JSONResponse({"error": f"injected fault {fault['status']}"}, status_code=fault["status"])
            return await call_next(request)

        @app.get("/launch/{hint}", response_class=HTMLResponse)
        def course_page(hint: str):
            spec = platform._launches.get(hint)
            if spec is None:
                return HTMLResponse("no such launch", status_code=404)
            roles = ", ".join(r.rsplit("#", 1)[-1] for r in spec.roles)
            return COURSE_PAGE.render(title=spec.context_title, user=spec.user, roles=roles,
                                      start=f"/launch/{hint}/start")

        @app.get("/launch/{hint}/start")
        def start(hint: str):
            spec = platform._launches.get(hint)
            if spec is None:
                return HTMLResponse("no such launch", status_code=404)
            login = LoginStart(None, platform._config(spec.flaw))
            login.set_lti_message_hint(hint=hint)
            return login.initiate_login(spec.user)

        @app.get("/auth")
        def auth(request: Request):
            return platform._launch(dict(request.query_params))

        @app.post("/auth")
        async def auth_post(request: Request):
            return await asyncio.to_thread(platform._launch, await form_of(request))

        @app.get("/jwks")
        def jwks():
            return {"keys": Registration().set_platform_public_key(platform._public_key).get_jwks()}

        @app.post("/token")
        async def token(request: Request):
            form = await form_of(request)
            return await asyncio.to_thread(platform._token, form)

        async def ags(request: Request, context_id: str, scopes: list[str], call: str, **args):
            data = await request_data(request)
            return await asyncio.to_thread(platform._ags, data, context_id, scopes, call, **args)

        @app.get("/ags/{context_id}/lineitems")
        async def get_lineitems(request: Request, context_id: str):
            return await ags(request, context_id, [AGS_LINEITEM, AGS_LINEITEM_READ], "handle_get_lineitems")

        @app.post("/ags/{context_id}/lineitems")
        async def post_lineitem(request: Request, context_id: str):
            return await ags(request, context_id, [AGS_LINEITEM], "handle_create_lineitem")

        @app.get("/ags/{context_id}/lineitems/{line_item_id}")
        async def get_lineitem(request: Request, context_id: str, line_item_id: str):
            return await ags(request, context_id, [AGS_LINEITEM, AGS_LINEITEM_READ], "handle_get_lineitem",
                             line_item_id=line_item_id)

        @app.put("/ags/{context_id}/lineitems/{line_item_id}")
        async def put_lineitem(request: Request, context_id: str, line_item_id: str):
            return await ags(request, context_id, [AGS_LINEITEM], "handle_update_lineitem",
                             line_item_id=line_item_id)

        @app.delete("/ags/{context_id}/lineitems/{line_item_id}")
        async def delete_lineitem(request: Request, context_id: str, line_item_id: str):
            return await ags(request, context_id, [AGS_LINEITEM], "handle_delete_lineitem",
                             line_item_id=line_item_id)

        @app.post("/ags/{context_id}/lineitems/{line_item_id}/scores")
        async def post_score(request: Request, context_id: str, line_item_id: str):
            return await ags(request, context_id, [AGS_SCORE], "handle_update_score", line_item_id=line_item_id)

        @app.get("/ags/{context_id}/lineitems/{line_item_id}/results")
        async def get_results(request: Request, context_id: str, line_item_id: str):
            return await ags(request, context_id, [AGS_RESULT_READ], "handle_get_results",
                             line_item_id=line_item_id)

        return app


class LoginStart(FastAPIOIDCLogin):
    """The library's OIDC login initiation; the message hint names the launch the user clicked."""

    def set_lti_message_hint(self, **kwargs) -> None:
        self._lti_message_hint = kwargs["hint"]


class LtiRequestData(LtiRequest):
    """A request already read from FastAPI, in the library's shape (its FastAPI request class is unfinished)."""

    def build_metadata(self, request: dict) -> dict:
        return request


async def form_of(request: Request) -> dict:
    return dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))


async def request_data(request: Request) -> dict:
    body = await request.body()
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    query = dict(request.query_params)
    for key in ("page", "limit"):
        if key in query and query[key].isdigit():
            query[key] = int(query[key])
    return {"method": request.method, "form_data": {}, "get_data": query, "headers": request.headers,
            "content_type": request.headers.get("content-type"), "path": request.url.path, "json": data}
