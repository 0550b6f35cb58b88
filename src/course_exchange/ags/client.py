"""The LMS's Assignment and Grade Services (LTI Advantage AGS 2.0), through ``pylti1p3``.

``pylti1p3`` (the maintained ``pylti1p3next`` distribution) does the protocol: the client-credentials
grant with a JWT signed by the tool's key (``ServiceConnector``), line items, scores and results
(``AssignmentsGradesService``). Its service calls work without a launch message: they need a
``Registration`` (issuer, client id, token URL, the tool's key) and the context's line items URL, which
the platform gave in a launch's AGS claim. This module adds only what a batch run from a terminal needs
and the library leaves to its web-framework adapters:

* an access-token cache that honours the token's ``expires_in`` (the library's base class has none), and
  one new token, then one retry, when the LMS answers 401 to a token it gave (expired or revoked early);
* a time limit on every request (``requests`` has none by default), so a hung LMS is a clear failure;
* every failure as one :class:`LmsError` whose text says what was asked and what came back, never the
  key or a token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.registration import Registration
from pylti1p3.service_connector import ServiceConnector

from .tool_key import public_jwk

SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score"]
REQUEST_TIMEOUT_S = 30.0        # one HTTP request to the LMS (connect and each read)
TOKEN_MARGIN_S = 30.0           # a cached token is renewed this long before the LMS says it expires
LINE_ITEM_TAG = "course-grader"  # our line items' tag: another tool's items with the same resourceId are not ours


class LmsError(Exception):
    """The LMS did not do what was asked (HTTP error, time-out, unreadable answer); ``str`` says which."""


@dataclass(frozen=True)
class AgsTarget:
    """Where one course's scores go: the platform's registration of this tool, and the context's line items."""

    issuer: str
    client_id: str
    token_url: str              # the platform's OAuth2 token endpoint
    lineitems_url: str          # the AGS line items endpoint of the course's context (from a launch)
    audience: str = ""          # the token endpoint's ``aud``, when the platform wants another than its URL


class _TimedSession(requests.Session):
    def request(self, *args, **kwargs):
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        return super().request(*args, **kwargs)


class _KeyedRegistration(Registration):
    """A registration whose ``kid`` is the one our JWKS names (the library's own derives none from a PEM)."""

    def __init__(self, kid: str):
        super().__init__()
        self._kid = kid

    def get_kid(self):
        return self._kid


class _Connector(ServiceConnector):
    """``ServiceConnector`` with the token cache the library leaves to its subclasses."""

    def __init__(self, registration, session):
        super().__init__(registration, session)
        self._tokens: dict[str, tuple[str, float]] = {}

    def _get_cached_access_token(self, scope_key):
        token, until = self._tokens.get(scope_key, ("", 0.0))
        return token if token and time.monotonic() < until else None

    def _cache_access_token(self, scope_key, access_token, expires_in):
        self._tokens[scope_key] = (access_token, time.monotonic() + float(expires_in or 0) - TOKEN_MARGIN_S)

    def forget_tokens(self) -> None:
        self._tokens.clear()


class AgsClient:
    """Line items, results and scores of one context, as one tool."""

    def __init__(self, target: AgsTarget, private_pem: str):
        reg = _KeyedRegistration(public_jwk(private_pem.encode("ascii"))["kid"])
        reg.set_issuer(target.issuer).set_client_id(target.client_id).set_auth_token_url(target.token_url)
        reg.set_tool_private_key(private_pem)
        if target.audience:
            reg.set_auth_audience(target.audience)
        session = _TimedSession()
        session.headers["User-Agent"] = "course-grader-ags"
        self.target = target
        self.connector = _Connector(reg, session)
        self.service = AssignmentsGradesService(self.connector, {"scope": SCOPES,
                                                                  "lineitems": target.lineitems_url})

    def _call(self, what: str, fn, *args):
        """``fn(*args)``; on a 401 one new token and one retry; every failure as :class:`LmsError`."""
        for attempt in (1, 2):
            try:
                return fn(*args)
            except LtiServiceException as exc:
                status = exc.response.status_code
                if status == 401 and attempt == 1:
                    self.connector.forget_tokens()   # the LMS no longer takes our token: ask for a new one
                    continue
                refused = " (the tool's key or registration was refused)" if status in (400, 401) else ""
                raise LmsError(f"{what}: the LMS answered HTTP {status} {exc.response.reason or ''}".rstrip()
                               + refused) from None
            except requests.Timeout:
                raise LmsError(f"{what}: the LMS did not answer within {REQUEST_TIMEOUT_S:g} s") from None
            except requests.RequestException as exc:
                raise LmsError(f"{what}: could not reach the LMS ({type(exc).__name__})") from None
            except (LtiException, ValueError, KeyError) as exc:
                raise LmsError(f"{what}: unexpected answer from the LMS ({exc})") from None
        raise AssertionError("unreachable")

    def line_items(self) -> dict[str, dict]:
        """Our line items of the context, by resourceId (exercise id)."""
        items = self._call("reading the line items", lambda: list(self.service.get_lineitems()))
        return {i["resourceId"]: i for i in items if i.get("tag") == LINE_ITEM_TAG and i.get("resourceId")}

    def create_line_item(self, exercise: str, label: str, maximum: float) -> dict:
        item = LineItem().set_resource_id(exercise).set_tag(LINE_ITEM_TAG).set_label(label)
        item.set_score_maximum(maximum)
        made = self._call(f"creating the line item {exercise}", self.service.create_lineitem, item)
        return {"id": made.get_id(), "resourceId": exercise, "label": made.get_label(),
                "scoreMaximum": made.get_score_maximum(), "tag": made.get_tag()}

    def results(self, line_item: dict) -> dict[str, dict]:
        """The line item's results, by LMS user id."""
        rows = self._call(f"reading the results of {line_item.get('resourceId')}",
                          lambda: list(self.service.get_grades(LineItem(line_item))))
        return {str(r["userId"]): r for r in rows if r.get("userId") is not None}

    def post_score(self, line_item: dict, user_id: str, given: float, maximum: float, timestamp: str) -> None:
        grade = (Grade().set_user_id(user_id).set_score_given(given).set_score_maximum(maximum)
                 .set_activity_progress("Completed").set_grading_progress("FullyGraded").set_timestamp(timestamp))
        self._call(f"posting the score of {line_item.get('resourceId')}", self.service.put_grade, grade,
                   LineItem(line_item))
