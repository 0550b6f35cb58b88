"""LTI 1.3 launches into a real hub (hub/jupyterhub_config.py with COURSE_HUB_LTI), from a real platform.

The platform is tests/lti/platform.py (lti1p3platform); the hub runs jupyterhub-ltiauthenticator with
course_exchange.lti_launch's checks, its real proxy, in demo mode (servers are the browser test's,
test_launch_in_browser.py). Each bad launch is made by the platform (Flaw) or, for a replay, by posting
a form again; each must be refused with the hub's page and leave no user and no session.
"""

from __future__ import annotations

import json

import pytest

for _module, _why in (("lti1p3platform", "the test LMS is built on lti1p3platform (requirements.txt)"),
                      ("fastapi", "the test LMS is served by FastAPI (requirements.txt)"),
                      ("uvicorn", "the test LMS is served by uvicorn (requirements.txt)"),
                      ("ltiauthenticator", "the hub's LTI login is jupyterhub-ltiauthenticator (requirements.txt)")):
    pytest.importorskip(_module, reason=f"no {_module}: {_why}; make .venv/.installed")

import hubtools  # noqa: E402
import requests  # noqa: E402

from lti import lms_hub  # noqa: E402
from lti.lms_hub import CONTEXT, COURSE, TITLE, hub_users, launch_form, page_text, post_form  # noqa: E402
from lti.platform import Flaw  # noqa: E402

pytestmark = pytest.mark.skipif(bool(hubtools.skip_reason()), reason=hubtools.skip_reason() or "ok")

LOGIN_COOKIE = "jupyterhub-hub-login"
REFUSED = "The launch from your course site was refused"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
WHY = {Flaw.WRONG_ISSUER: "Invalid issuer", Flaw.WRONG_AUDIENCE: "Audience doesn't match",
       Flaw.EXPIRED: "Signature has expired", Flaw.NOT_YET_VALID: "not yet valid",
       Flaw.BAD_SIGNATURE: "Signature verification failed", Flaw.UNREGISTERED_DEPLOYMENT: "deployment",
       Flaw.NO_ROLES: "claim/roles not in request", Flaw.NO_STATE: "arg state not in request",
       Flaw.WRONG_STATE: "OAuth state mismatch"}


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    with lms_hub.platform_and_hub(tmp_path_factory.mktemp("lti-hub")) as (platform, hub):
        yield platform, hub


def launch(platform, user, roles, *, context=CONTEXT, flaw=None, session=None):
    session = session or requests.Session()
    form = launch_form(session, platform.start_url(user, roles, context, TITLE, "rl-1", flaw=flaw))
    return session, form, post_form(session, form)


def signed_in_as(hub, session) -> str | None:
    r = session.get(f"{hub.api_url}/user", timeout=30)
    return r.json()["name"] if r.status_code == 200 else None


def assert_refused(hub, session, answer, user, why: str) -> None:
    assert answer.status_code in (400, 401, 403), (answer.status_code, answer.headers.get("location"))
    text = page_text(answer)
    assert REFUSED in text and why in text, text[-600:]
    assert LOGIN_COOKIE not in session.cookies
    assert signed_in_as(hub, session) is None
    assert user not in hub_users(hub)


def test_a_learner_is_logged_in_as_a_student_of_the_mapped_course(lms):
    platform, hub = lms
    session, _, answer = launch(platform, "lti-alice", ["Learner"])
    assert answer.status_code == 302 and answer.headers["location"] == "/hub/"
    assert signed_in_as(hub, session) == "lti-alice"
    assert hub_users(hub)["lti-alice"]["groups"] == [f"course-{COURSE}-students"]
    record = json.loads((hub.state / "lti" / "ags" / f"{COURSE}.json").read_text())
    assert record["lineitems"] == platform.lineitems_url(CONTEXT) and record["context_id"] == CONTEXT
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in record["scope"]
    assert record["members"]["lti-alice"] == {"sub": "lti-alice", "role": "student"}
    me = requests.get(f"{hub.exchange_url}api/me", timeout=60,
                      headers={"Authorization": f"token {hub.token('lti-alice')}"})
    assert me.json() == {"user": "lti-alice", "courses": {COURSE: "student"}}     # the exchange's view


def test_instructors_and_teaching_assistants_are_instructors_and_other_courses_are_kept(lms):
    platform, hub = lms
    hub.add_group("course-other-students", ["lti-carol"])
    for user, roles in (("lti-prof", ["Instructor"]), ("lti-ta", [TA]), ("lti-carol", ["Learner", "Instructor"])):
        session, _, answer = launch(platform, user, roles)
        assert answer.status_code == 302, page_text(answer)[-400:]
    users = hub_users(hub)
    assert users["lti-prof"]["groups"] == [f"course-{COURSE}-instructors"]
    assert users["lti-ta"]["groups"] == [f"course-{COURSE}-instructors"]
    assert sorted(users["lti-carol"]["groups"]) == ["course-lti1-instructors", "course-other-students"]
    me = requests.get(f"{hub.exchange_url}api/me", timeout=60,
                      headers={"Authorization": f"token {hub.token('lti-ta')}"})
    assert me.json()["courses"] == {COURSE: "instructor"}
    _, _, answer = launch(platform, "lti-carol", ["Learner"])          # her role in the LMS changed
    assert sorted(hub_users(hub)["lti-carol"]["groups"]) == ["course-lti1-students", "course-other-students"]


@pytest.mark.parametrize("flaw", list(Flaw), ids=str)
def test_a_bad_launch_is_refused_with_a_page_and_no_user(lms, flaw):
    platform, hub = lms
    user = f"lti-bad-{flaw}"
    session, _, answer = launch(platform, user, ["Learner"], flaw=flaw)
    assert_refused(hub, session, answer, user, WHY[flaw])


def test_a_replayed_launch_is_refused(lms):
    platform, hub = lms
    session = requests.Session()
    form = launch_form(session, platform.start_url("lti-dave", ["Learner"], CONTEXT, TITLE, "rl-1"))
    captured = requests.utils.dict_from_cookiejar(session.cookies)     # the state and nonce cookies
    assert post_form(session, form).status_code == 302
    thief = requests.Session()
    thief.cookies.update(captured)
    answer = post_form(thief, form)
    assert answer.status_code == 400
    text = page_text(answer)
    assert REFUSED in text and "already used" in text
    assert LOGIN_COOKIE not in thief.cookies and signed_in_as(hub, thief) is None


@pytest.mark.parametrize("roles, context, why", [
    (["Learner"], "lms-course-not-on-this-hub", "is not set up on this hub"),
    (["Mentor"], CONTEXT, "no course role"),
    ([], CONTEXT, "no course role"),
    (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"], CONTEXT, "no course role"),
], ids=["unmapped-context", "mentor", "no-roles-at-all", "institution-role-only"])
def test_a_launch_without_a_course_or_a_course_role_is_refused(lms, roles, context, why):
    platform, hub = lms
    user = f"lti-nocourse-{len(roles)}-{context[-4:]}-{why[:2]}"
    session, _, answer = launch(platform, user, roles, context=context)
    assert_refused(hub, session, answer, user, why)


def test_the_hubs_login_opened_without_the_lms_says_where_to_start(lms):
    _, hub = lms
    answer = requests.get(f"{hub.url}hub/lti13/oauth_login", timeout=30)
    assert answer.status_code == 400
    text = page_text(answer)
    assert REFUSED in text and "entered by the course's link in the LMS" in text


def test_an_lms_user_id_that_is_no_unix_name_gets_a_safe_hub_name_and_is_recorded(lms):
    platform, hub = lms
    session, _, answer = launch(platform, "5", ["Learner"])          # Moodle's sub: the user's number
    assert answer.status_code == 302
    name = signed_in_as(hub, session)
    assert name.startswith("lti-5-") and name in hub_users(hub)
    record = json.loads((hub.state / "lti" / "ags" / f"{COURSE}.json").read_text())
    assert record["members"][name] == {"sub": "5", "role": "student"}


def test_a_launch_form_posted_without_the_browsers_cookies_is_refused(lms):
    platform, hub = lms
    form = launch_form(requests.Session(), platform.start_url("lti-frank", ["Learner"], CONTEXT, TITLE, "rl-1"))
    other = requests.Session()                                         # another browser: no state cookie
    assert_refused(hub, other, post_form(other, form), "lti-frank", "OAuth state missing from cookies")


def test_on_https_the_state_and_nonce_cookies_come_back_with_the_lmss_cross_site_post(lms):
    """The launch's POST comes from the LMS's site: its cookies must be SameSite=None (with Secure) on
    https; on http (no Secure possible) they stay as ltiauthenticator sets them. X-Scheme is how a TLS
    proxy in front of the hub says the browser's scheme."""
    platform, hub = lms
    args = {"iss": platform.issuer, "login_hint": "lti-gina", "target_link_uri": f"{hub.url}hub/",
            "client_id": lms_hub.CLIENT_ID, "lti_message_hint": "x"}
    for scheme in ("https", "http"):
        answer = requests.get(f"{hub.url}hub/lti13/oauth_login", params=args, headers={"X-Scheme": scheme},
                              allow_redirects=False, timeout=30)
        assert answer.status_code == 302
        cookies = [c for c in answer.raw.headers.getlist("Set-Cookie") if c.startswith("lti13authenticator")]
        assert len(cookies) == 2, cookies
        for cookie in cookies:
            assert (("SameSite=None" in cookie and "Secure" in cookie) if scheme == "https"
                    else "SameSite=None" not in cookie), (scheme, cookie)
