"""The test platform's own AGS and token endpoints (tests/lti/platform.py), called as a tool calls them.

The tool's side here is what every LTI tool sends (RFC 7523 client assertion signed with the tool's
key, whose JWKS a small loopback server publishes); the hub's launch is tested in test_launch.py.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
import uuid

import pytest

for _module in ("lti1p3platform", "fastapi", "uvicorn", "jwt", "jwcrypto"):
    pytest.importorskip(_module, reason=f"no {_module}: the test LMS needs it (requirements.txt)")

import jwt  # noqa: E402
import requests  # noqa: E402
from jwcrypto.jwk import JWK  # noqa: E402

from lti.platform import AGS_LINEITEM, AGS_RESULT_READ, AGS_SCORE, CLIENT_ASSERTION_TYPE, Platform  # noqa: E402

CLIENT_ID = "tool-client"
CONTEXT = "ctx-ags"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


class ToolKeys:
    """A tool's RSA key and a loopback server publishing its JWKS."""

    def __init__(self) -> None:
        self.key = JWK.generate(kty="RSA", size=2048, kid=uuid.uuid4().hex)
        public = json.loads(self.key.export_public())
        body = json.dumps({"keys": [{**public, "alg": "RS256", "use": "sig"}]}).encode()

        class Jwks(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def assertion(self, audience: str, *, key: JWK | None = None, sub: str = CLIENT_ID) -> str:
        now = int(time.time())
        claims = {"iss": CLIENT_ID, "sub": sub, "aud": audience, "iat": now, "exp": now + 300,
                  "jti": uuid.uuid4().hex}
        return jwt.encode(claims, (key or self.key).export_to_pem(private_key=True, password=None),
                          algorithm="RS256", headers={"kid": self.key.key_id})


@pytest.fixture(scope="module")
def lms():
    tool = ToolKeys()
    with Platform() as platform:
        platform.register_tool(client_id=CLIENT_ID, deployment_id="d1", login_url="http://127.0.0.1:9/login",
                               redirect_uris=["http://127.0.0.1:9/launch"], jwks_url=tool.url)
        yield platform, tool
    tool.server.shutdown()


def token(platform, tool, scopes=(AGS_LINEITEM, AGS_SCORE, AGS_RESULT_READ), **assertion):
    r = requests.post(platform.token_url, timeout=30, data={
        "grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
        "client_assertion": tool.assertion(platform.token_url, **assertion), "scope": " ".join(scopes)})
    return r


def bearer(access_token: str, media: str | None = None) -> dict:
    return {"Authorization": f"Bearer {access_token}", **({"Content-Type": media} if media else {})}


def score(user: str, given: float, *, at: str = "2026-12-08T01:00:00+00:00") -> dict:
    return {"userId": user, "scoreGiven": given, "scoreMaximum": 10, "timestamp": at,
            "activityProgress": "Completed", "gradingProgress": "FullyGraded"}


def test_a_token_is_granted_only_for_the_tools_own_key(lms):
    platform, tool = lms
    good = token(platform, tool)
    assert good.status_code == 200, good.text
    assert set(good.json()["scope"].split()) == {AGS_LINEITEM, AGS_SCORE, AGS_RESULT_READ}
    forged = token(platform, tool, key=JWK.generate(kty="RSA", size=2048))
    assert forged.status_code == 401 and forged.json()["error"] == "invalid_client"
    other = token(platform, tool, sub="someone-else")
    assert other.status_code == 401


def test_line_items_scores_and_results_round_trip(lms):
    platform, tool = lms
    access = token(platform, tool).json()["access_token"]
    url = platform.lineitems_url(CONTEXT)
    made = requests.post(url, json={"label": "ex01", "scoreMaximum": 10, "resourceId": "ex01"},
                         headers=bearer(access, LINEITEM_TYPE), timeout=30)
    assert made.status_code == 201, made.text
    item = made.json()["id"]
    listed = requests.get(url, headers=bearer(access), timeout=30).json()
    assert [i["id"] for i in listed] == [item] and listed[0]["resourceId"] == "ex01"
    posted = requests.post(f"{item}/scores", json=score("alice", 7), headers=bearer(access, SCORE_TYPE), timeout=30)
    assert posted.status_code == 201, posted.text
    again = requests.post(f"{item}/scores", json=score("alice", 8, at="2026-12-08T01:00:05+00:00"),
                          headers=bearer(access, SCORE_TYPE), timeout=30)
    assert again.status_code == 200
    older = requests.post(f"{item}/scores", json=score("alice", 1, at="2026-12-08T00:00:00+00:00"),
                          headers=bearer(access, SCORE_TYPE), timeout=30)
    assert older.status_code == 409
    results = requests.get(f"{item}/results", headers=bearer(access), timeout=30).json()
    assert [(r["userId"], r["resultScore"], r["resultMaximum"]) for r in results] == [("alice", 8, 10)]
    assert platform.results(CONTEXT, item)["alice"]["resultScore"] == 8
    assert [s["scoreGiven"] for _, s in platform.scores(CONTEXT)] == [7, 8]


def test_each_route_wants_its_scope_and_a_live_token(lms):
    platform, tool = lms
    read_only = token(platform, tool, scopes=(AGS_RESULT_READ,)).json()["access_token"]
    refused = requests.post(platform.lineitems_url(CONTEXT), json={"label": "x", "scoreMaximum": 1},
                            headers=bearer(read_only, LINEITEM_TYPE), timeout=30)
    assert refused.status_code == 401
    assert requests.get(platform.lineitems_url(CONTEXT), headers={}, timeout=30).status_code == 401
    access = token(platform, tool).json()["access_token"]
    assert requests.get(platform.lineitems_url(CONTEXT), headers=bearer(access), timeout=30).status_code == 200
    platform.expire_access_tokens()
    expired = requests.get(platform.lineitems_url(CONTEXT), headers=bearer(access), timeout=30)
    assert expired.status_code == 401 and "expired" in expired.text
    fresh = token(platform, tool).json()["access_token"]
    assert requests.get(platform.lineitems_url(CONTEXT), headers=bearer(fresh), timeout=30).status_code == 200


def test_bad_scores_and_line_items_are_refused_and_faults_can_be_injected(lms):
    platform, tool = lms
    access = token(platform, tool).json()["access_token"]
    url = platform.lineitems_url("ctx-faults")
    no_max = requests.post(url, json={"label": "x"}, headers=bearer(access, LINEITEM_TYPE), timeout=30)
    assert no_max.status_code == 400
    item = requests.post(url, json={"label": "x", "scoreMaximum": 5}, headers=bearer(access, LINEITEM_TYPE),
                         timeout=30).json()["id"]
    bad = requests.post(f"{item}/scores", json={"userId": "bob", "scoreGiven": 3}, headers=bearer(access), timeout=30)
    assert bad.status_code == 400 and "timestamp" in bad.text
    platform.fail_next(1, status=503)
    failed = requests.post(f"{item}/scores", json=score("bob", 3), headers=bearer(access, SCORE_TYPE), timeout=30)
    assert failed.status_code == 503
    assert platform.scores("ctx-faults") == []
    platform.hang_next(1, 3.0)
    with pytest.raises(requests.Timeout):
        requests.post(f"{item}/scores", json=score("bob", 3), headers=bearer(access, SCORE_TYPE), timeout=0.5)
    ok = requests.post(f"{item}/scores", json=score("bob", 3), headers=bearer(access, SCORE_TYPE), timeout=30)
    assert ok.status_code in (200, 201)
