"""Hostile students through the real hub and its proxy: each attempt gets a clear refusal, and nothing of
anyone else changes (the course's whole state, as its instructor sees it, is compared before and after)."""

import hashlib
import http.client
import json
import select
import subprocess
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlparse

import pytest
import requests

from conftest import COURSE_CMD, ROOT, SAMPLES

CORRECT = (SAMPLES / "correct__ex02_diagnose.ipynb").read_bytes()
PARTIAL = (SAMPLES / "partial__ex02_diagnose.ipynb").read_bytes()
BROKEN = (SAMPLES / "bad-invalid-json__ex01_capture_boundary.ipynb").read_bytes()
GIB = 1 << 30


def call(course, user, method, path, **kw):
    headers = kw.pop("headers", {})
    if user:
        headers["Authorization"] = f"token {course.tokens[user]}"
    return requests.request(method, course.hub.exchange_url + path, headers=headers, timeout=120, **kw)


class Raw:
    """A response of :func:`raw`, read like a requests one."""

    def __init__(self, status: int, text: str):
        self.status_code, self.text = status, text

    def json(self):
        return json.loads(self.text)


def raw(course, user, method, path, body: bytes = b""):
    """``path`` sent exactly as written (requests would resolve dot segments and decoded dots first)."""
    u = urlparse(course.hub.exchange_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    try:
        conn.request(method, u.path + path, body=body, headers={"Authorization": f"token {course.tokens[user]}"})
        resp = conn.getresponse()
        return Raw(resp.status, resp.read().decode(errors="replace"))
    finally:
        conn.close()


def refused(r, status, *words):
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["status"] == status and body["error"]
    for w in words:
        assert w in body["error"], body["error"]
    return body["error"]


def snapshot(course):
    """Everything the course holds: every stored hand-in (bytes by sha256), deadlines, everyone's feedback."""
    prof = course.client(course.instructors[0])
    state = {"deadlines": prof.deadlines(course.id), "handins": {}, "feedback": {}}
    for s in course.students:
        me = course.client(s)
        state["handins"][s] = me.my_handins(course.id)["handins"]
        fb = me.my_feedback(course.id)
        state["feedback"][s] = fb and {**fb, "pages": {p: me.my_feedback_page(course.id, p) for p in fb["pages"]}}
        for h in state["handins"][s]:
            assert prof.handin_file(course.id, h["id"]).__len__() == h["size"]
    return state


@pytest.fixture
def class_with_work(make_course, tmp_path):
    """A course where the victim has a hand-in and returned feedback, and the attacker is a classmate."""
    course = make_course(students=2)
    victim, attacker = course.students
    prof = course.client(course.instructors[0])
    course.client(victim).hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", CORRECT)
    for s in course.students:
        prof.give_back(course.id, s, {"total": 9.0, "possible": 9.0},
                       {"index.html": f"<html><body>{s}'s own page</body></html>"})
    return course, victim, attacker


def test_hand_in_as_another_user(class_with_work, tmp_path):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    for query in ("student", "user", "username"):
        refused(call(course, attacker, "POST", f"api/courses/{course.id}/handins/ex02_diagnose.ipynb",
                     params={query: victim}, data=PARTIAL), 400, "refused", "from the hub")
    refused(call(course, attacker, "POST", f"api/courses/{course.id}/handins/{victim}__ex02_diagnose.ipynb",
                 data=PARTIAL), 400, f"{victim}__ex02_diagnose.ipynb")   # not a name, or no exercise
    refused(call(course, None, "POST", f"api/courses/{course.id}/handins/ex02_diagnose.ipynb", data=PARTIAL,
                 headers={"X-Forwarded-User": victim, "Authorization": "token not-a-token"}), 401, "not signed in")
    assert snapshot(course) == before


def test_read_or_overwrite_another_students_hand_in_or_feedback(class_with_work, tmp_path):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    victims = before["handins"][victim][0]["id"]
    refused(call(course, attacker, "GET", f"api/courses/{course.id}/handins/{victims}/file"), 403, "not an instructor")
    refused(call(course, attacker, "PUT", f"api/courses/{course.id}/returns/{victim}",
                 json={"score": {"total": 0}, "pages": {"index.html": "x"}}), 403, "not an instructor")
    refused(call(course, attacker, "PUT", f"api/courses/{course.id}/returns/{attacker}",
                 json={"score": {"total": 99}, "pages": {"index.html": "x"}}), 403, "not an instructor")
    refused(call(course, attacker, "GET", f"api/courses/{course.id}/feedback", params={"student": victim}), 400)
    mine = call(course, attacker, "GET", f"api/courses/{course.id}/feedback/index.html")
    assert mine.status_code == 200 and f"{attacker}'s own page" in mine.text and victim not in mine.text
    listed = call(course, attacker, "GET", f"api/courses/{course.id}/handins").json()["handins"]
    assert listed == []                                                         # only one's own, never others'
    # a hand-in of the same exercise is the attacker's own new record, never the victim's file
    own = course.client(attacker).hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", PARTIAL)["handin"]
    assert own["student"] == attacker
    after = snapshot(course)
    assert after["handins"][victim] == before["handins"][victim]
    assert after["feedback"] == before["feedback"]


def test_instructor_endpoints_as_a_student(class_with_work):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    c = course.id
    refused(call(course, attacker, "GET", f"api/courses/{c}/collect"), 403, "not an instructor")
    refused(call(course, attacker, "PUT", f"api/courses/{c}/deadlines", json={"ex02": "2000-01-01T00:00+00:00"}),
            403, "not an instructor")
    refused(call(course, attacker, "GET", f"api/courses/{c}/handins/1/file"), 403)
    assert snapshot(course) == before


def test_instructor_of_one_course_on_another(make_course, class_with_work, tmp_path):
    course, victim, _ = class_with_work
    other = make_course(students=1)            # its instructor teaches there, and is also a student of course
    teacher = other.instructors[0]
    course.hub.add_group(f"course-{course.id}-students", [teacher])
    before = snapshot(course)
    token = {"Authorization": f"token {other.tokens[teacher]}"}
    url = course.hub.exchange_url + f"api/courses/{course.id}/"
    for method, path, kw in (("GET", "collect", {}), ("PUT", "deadlines", {"json": {"ex02": None}}),
                             ("PUT", f"returns/{victim}", {"json": {"score": {}, "pages": {"index.html": "x"}}}),
                             ("GET", f"handins/{before['handins'][victim][0]['id']}/file", {})):
        refused(requests.request(method, url + path, headers=token, timeout=60, **kw), 403, "not an instructor",
                course.id)
    assert other.client(teacher).collect(other.id)["counted"] == []          # their own course: allowed
    stranger = requests.get(course.hub.exchange_url + f"api/courses/{course.id}/handins",
                            headers={"Authorization": f"token {other.tokens[other.students[0]]}"}, timeout=60)
    refused(stranger, 403, "is not in course")
    assert snapshot(course) == before


@pytest.mark.parametrize("path, status", [
    ("handins/..%2F..%2F..%2Fetc%2Fpasswd", 400),
    ("handins/..%2Fex02_diagnose.ipynb", 400),
    ("handins/ex02_diagnose.ipynb%00.txt", 400),
    ("handins/.ex02_diagnose.ipynb", 400),
    ("handins/ex99_nothing.ipynb", 400),
    ("feedback/..%2F..%2Fexchange.sqlite", 400),
    ("feedback/..%2Findex.html", 400),
])
def test_path_traversal_in_names(class_with_work, path, status):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    method = "POST" if path.startswith("handins") else "GET"
    r = raw(course, attacker, method, f"api/courses/{course.id}/{path}", PARTIAL if method == "POST" else b"")
    assert r.status_code in (status, 404), (r.status_code, r.text)
    assert r.json()["error"]
    for course_id in ("..%2F..", "%2E%2E", "..", "C1", "a" * 41):
        r = raw(course, attacker, "GET", f"api/courses/{course_id}/handins")
        if course_id in ("..", "%2E%2E"):
            assert r.status_code in (400, 404) and r.json()["error"], r.text   # the proxy may resolve it first
        else:
            refused(r, 400, "course id")
    assert snapshot(course) == before


def _rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _stream(url: str, token: str, *, length: int | None, send: int) -> tuple[int | None, str, int]:
    """POST up to ``send`` bytes of zeros in 1 MiB pieces (never held at once), declaring ``length``
    (chunked when None), watching for an early answer before each piece. Returns (status or None, body, bytes
    sent before the server answered or closed)."""
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    conn.putrequest("POST", u.path)
    conn.putheader("Authorization", f"token {token}")
    if length is None:
        conn.putheader("Transfer-Encoding", "chunked")
    else:
        conn.putheader("Content-Length", str(length))
    conn.endheaders()
    piece, sent = bytes(1 << 20), 0
    try:
        while sent < send:
            if select.select([conn.sock], [], [], 0)[0]:
                break                            # an answer came early: stop sending, as curl does
            if length is None:
                conn.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
            else:
                conn.send(piece)
            sent += len(piece)
    except OSError:
        pass                                     # the server stopped reading: what a refusal looks like here
    try:
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace"), sent
    except (OSError, http.client.HTTPException):
        return None, "", sent
    finally:
        conn.close()


def test_a_1_gb_upload_is_refused_early_and_never_held(class_with_work):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    pid = course.hub.service_pid()
    rss = _rss_kib(pid)
    url = course.hub.exchange_url + f"api/courses/{course.id}/handins/ex02_diagnose.ipynb"
    status, body, sent = _stream(url, course.tokens[attacker], length=GIB, send=GIB)
    assert status == 413, (status, body, sent)
    assert "at most" in json.loads(body)["error"]
    assert sent < GIB                                # refused from Content-Length, before the body was read
    status, body, sent = _stream(url, course.tokens[attacker], length=None, send=GIB)   # no length: mid-stream
    assert status == 413, (status, body)
    assert "nothing was stored" in json.loads(body)["error"]
    assert sent < GIB
    assert _rss_kib(pid) - rss < 64 * 1024           # the service never held the body (grew by < 64 MiB)
    assert snapshot(course) == before
    assert call(course, attacker, "GET", f"api/courses/{course.id}/handins").json()["handins"] == []


def test_a_flood_of_hand_ins_is_rate_limited_per_user(class_with_work, tmp_path):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    from course_exchange import limits

    codes = []
    for _ in range(limits.RATE_HANDINS + 5):
        r = call(course, attacker, "POST", f"api/courses/{course.id}/handins/ex01_capture_boundary.ipynb",
                 data=BROKEN)
        codes.append(r.status_code)
        if r.status_code == 429:
            message = refused(r, 429, "too many hand-ins", "nothing was stored")
            break
    assert codes[:-1] == [422] * limits.RATE_HANDINS and codes[-1] == 429, codes
    assert f"at most {limits.RATE_HANDINS}" in message
    # a classmate is not slowed down by someone else's flood
    ok = course.client(victim).hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", PARTIAL)
    assert ok["handin"]["student"] == victim
    after = snapshot(course)
    assert [(h["id"], h["sha256"]) for h in after["handins"][victim][:-1]] == \
        [(h["id"], h["sha256"]) for h in before["handins"][victim]]
    assert after["handins"][attacker] == [] and after["feedback"] == before["feedback"]


def test_wrong_methods_bad_json_and_no_login(class_with_work):
    course, victim, attacker = class_with_work
    prof = course.instructors[0]
    before = snapshot(course)
    c = course.id
    refused(call(course, attacker, "DELETE", f"api/courses/{c}/handins"), 405, "not supported")
    refused(call(course, attacker, "GET", f"api/courses/{c}/handins/ex02_diagnose.ipynb"), 405, "not supported")
    refused(call(course, attacker, "PUT", f"api/courses/{c}/handins/ex02_diagnose.ipynb", data=b"{}"), 405)
    refused(call(course, prof, "PUT", f"api/courses/{c}/deadlines", data=b"{not json"), 400, "not JSON")
    refused(call(course, prof, "PUT", f"api/courses/{c}/deadlines", data=b"[1, 2]"), 400, "JSON object")
    refused(call(course, prof, "PUT", f"api/courses/{c}/deadlines", json={"ex02": "tomorrow"}), 400, "ISO 8601")
    refused(call(course, prof, "PUT", f"api/courses/{c}/deadlines", json={"ex02": "2030-01-01T00:00"}), 400,
            "time zone")
    refused(call(course, prof, "PUT", f"api/courses/{c}/deadlines", json={"student": "x"}), 400, "refused")
    refused(call(course, prof, "PUT", f"api/courses/{c}/returns/{victim}", data=b"\xff\xfe"), 400, "not JSON")
    refused(call(course, prof, "PUT", f"api/courses/{c}/returns/{victim}",
                 json={"score": {}, "pages": {"../x.html": "x"}}), 400, "no folders")
    refused(call(course, None, "GET", f"api/courses/{c}/handins"), 401, "not signed in")
    refused(call(course, None, "GET", "api/nothing-here"), 404)
    assert snapshot(course) == before


def test_the_grader_refusal_is_course_submits(class_with_work, tmp_path):
    course, victim, attacker = class_with_work
    bad = tmp_path / "ex01_capture_boundary.ipynb"
    bad.write_bytes(BROKEN)
    # the same student off the hub (no hub variables: on a hub, --student and --out are refused)
    off_hub = {k: v for k, v in course.env(attacker).items()
               if k not in ("JUPYTERHUB_API_TOKEN", "COURSE_EXCHANGE_URL")}
    local = subprocess.run([str(COURSE_CMD), "submit", str(bad), "--student", attacker,
                            "--out", str(tmp_path / "handin")], env=off_hub, capture_output=True, text=True,
                           timeout=900, cwd=ROOT)
    assert local.returncode == 1, local.stderr
    words = (local.stdout + local.stderr).split(f"would reject {bad}: ", 1)[1].strip()
    hub = course.course(attacker, "submit", bad)
    assert hub.returncode == 1
    assert f"would reject {bad.name}: {words}" in hub.stderr, (hub.stderr, words)


def test_a_browser_without_login_is_sent_to_the_hub(class_with_work):
    course, victim, attacker = class_with_work
    r = requests.get(course.hub.exchange_url + f"courses/{course.id}/feedback/", allow_redirects=False, timeout=60)
    assert r.status_code == 302 and "/hub/api/oauth2/authorize" in r.headers["Location"]


def _headers_then_wait(url: str, token: str | None, *, method: str = "POST", length: int, first: int = 1 << 16,
                       wait_s: float = 60.0) -> tuple[int | None, str]:
    """Declare a ``length``-byte body, send only its first ``first`` bytes (the proxy passes a request on
    with its first bytes), then wait for an answer. A service that reads a body before it checks who is
    sending answers nothing until the whole body came: (None, "")."""
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=wait_s)
    try:
        conn.putrequest(method, u.path)
        if token:
            conn.putheader("Authorization", f"token {token}")
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        conn.send(bytes(first))
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return None, ""
    finally:
        conn.close()


def test_a_big_body_is_refused_before_it_is_read(class_with_work):
    """No endpoint reads a body before it knows the caller may send it: a stranger with no token, or a
    student at an instructor's endpoint, cannot make the service hold megabytes (15 MiB is under the
    returns' cap, so only the order of the checks refuses it)."""
    course, victim, attacker = class_with_work
    before = snapshot(course)
    api = course.hub.exchange_url + "api/"
    c = f"{api}courses/{course.id}/"
    student, prof = course.tokens[attacker], course.tokens[course.instructors[0]]
    mib = 1 << 20
    for token, method, url, length, status, words in (       # each length is under the endpoint's cap
            (None, "POST", c + "handins/ex02_diagnose.ipynb", 6 * mib, 401, "not signed in"),
            (None, "PUT", c + f"returns/{victim}", 15 * mib, 401, "not signed in"),
            (student, "PUT", c + f"returns/{victim}", 15 * mib, 403, "not an instructor"),
            (student, "POST", c + f"handins/{victim}__ex02_diagnose.ipynb", 6 * mib, 400, victim),
            (student, "PUT", c + "deadlines", 60 << 10, 403, "not an instructor"),
            # and over an endpoint's cap, or at one that takes no body: refused from the length alone
            (None, "POST", api + "me", 15 * mib, 413, "takes none"),
            (student, "POST", c + "handins", 15 * mib, 413, "takes none"),
            (prof, "PUT", c + "deadlines", mib, 413, "at most")):
        code, text = _headers_then_wait(url, token, method=method, length=length, first=min(length // 2, 1 << 16))
        assert code == status, (method, url, code, text[:300])
        assert words in json.loads(text)["error"], text
    assert snapshot(course) == before


def test_a_revoked_token_is_refused_within_seconds(class_with_work):
    """A token the hub revoked (deleted on the token page, or a stopped server's) is not replayed for the
    five minutes JupyterHub's client caches a token by default."""
    from course_exchange import limits

    course, victim, attacker = class_with_work
    made = course.hub.api("POST", f"users/{attacker}/tokens", json={"note": "to revoke"})
    headers = {"Authorization": f"token {made['token']}"}
    me = requests.get(course.hub.exchange_url + "api/me", headers=headers, timeout=60)
    assert me.status_code == 200 and me.json()["user"] == attacker
    course.hub.api("DELETE", f"users/{attacker}/tokens/{made['id']}")
    deadline = time.monotonic() + limits.AUTH_CACHE_S + 30      # the cache's age, and room for a busy machine
    while True:
        r = requests.get(course.hub.exchange_url + "api/me", headers=headers, timeout=60)
        if r.status_code == 401 or time.monotonic() > deadline:
            break
        time.sleep(1)
    refused(r, 401, "not signed in")
    r = requests.post(course.hub.exchange_url + f"api/courses/{course.id}/handins/ex02_diagnose.ipynb",
                      headers=headers, data=PARTIAL, timeout=60)
    refused(r, 401, "not signed in")
    assert course.client(attacker).my_handins(course.id)["handins"] == []


def _browser_session(course, user: str) -> requests.Session:
    """A browser's cookies after logging in to the hub as ``user`` (the demo hub takes any password) and
    opening their feedback page, which sends them through the hub's OAuth to the exchange's cookie."""
    s = requests.Session()
    login = course.hub.url + "hub/login"
    s.get(login, timeout=60)
    r = s.post(login + "?next=%2Fhub%2Fhome", data={"username": user, "password": "any",
                                                   "_xsrf": s.cookies.get("_xsrf", "")},
               allow_redirects=False, timeout=60)                      # no redirect: no server is started
    assert r.status_code == 302, (r.status_code, r.text[:300])
    page = s.get(course.hub.exchange_url + f"courses/{course.id}/feedback/", timeout=60,
                 headers={"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none"})
    assert page.status_code == 200 and f"{user}'s own page" in page.text, (page.status_code, page.text[:300])
    return s


def test_cross_site_requests_with_the_students_cookie_are_not_signed_in(class_with_work):
    """CSRF: another site makes the victim's browser, logged in to the hub, hand in or read through the
    exchange. Only the hub token, or the cookie with its XSRF token, is an identity for anything but a
    page view."""
    course, victim, attacker = class_with_work
    before = snapshot(course)
    s = _browser_session(course, victim)
    url = course.hub.exchange_url + f"api/courses/{course.id}/"
    evil = {"Origin": "http://evil.example", "Referer": "http://evil.example/page"}
    posts = ({**evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},     # a <form> post
             {**evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},         # fetch()
             {**evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
             evil)                                                                       # no Sec-Fetch-*
    for headers in posts:
        refused(s.post(url + "handins/ex02_diagnose.ipynb", data=PARTIAL, headers=headers, timeout=60), 401,
                "not signed in")
    for mode in ("cors", "no-cors"):                                   # a script reading the JSON
        refused(s.get(url + "feedback", headers={**evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": mode},
                      timeout=60), 401, "not signed in")
    r = s.get(url + "feedback", headers={"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none"}, timeout=60)
    assert r.status_code == 200 and r.json()["student"] == victim      # the cookie itself is good
    assert snapshot(course) == before


def test_one_users_hand_ins_in_flight_are_capped_and_released(class_with_work, tmp_path):
    """A student holding many slow uploads open (each up to the upload cap, in memory) is refused the next
    one; a hand-in whose sender hung up mid-body gives its place back."""
    from course_exchange import limits

    course, victim, attacker = class_with_work
    before = snapshot(course)
    url = urlparse(course.hub.exchange_url + f"api/courses/{course.id}/handins/ex02_diagnose.ipynb")

    def half_sent() -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        conn.putrequest("POST", url.path)
        conn.putheader("Authorization", f"token {course.tokens[attacker]}")
        conn.putheader("Content-Length", str(len(CORRECT)))
        conn.endheaders()
        conn.send(CORRECT[: len(CORRECT) // 2])
        return conn

    held = [half_sent() for _ in range(limits.UPLOADS_IN_FLIGHT_PER_USER)]
    try:
        for _ in range(20):
            # a held upload answered already was refused (a probe overtook it while both were admitted): again
            held = [c if not select.select([c.sock], [], [], 0)[0] else (c.close(), half_sent())[1] for c in held]
            time.sleep(1)
            r = call(course, attacker, "POST", f"api/courses/{course.id}/handins/ex01_capture_boundary.ipynb",
                     data=BROKEN)
            if r.status_code == 429:
                break
            assert r.status_code == 422, (r.status_code, r.text)
        refused(r, 429, "at once", "nothing was stored")
        ok = course.client(victim).hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", PARTIAL)
        assert ok["handin"]["student"] == victim                      # a classmate is not held up
        held[0].send(CORRECT[len(CORRECT) // 2:])                     # the first one finishes: stored
        resp = held[0].getresponse()
        assert resp.status == 201, (resp.status, resp.read()[:300])
    finally:
        for conn in held:
            conn.close()                     # the second hangs up mid-body
    for _ in range(20):
        r = call(course, attacker, "POST", f"api/courses/{course.id}/handins/ex02_diagnose.ipynb", data=PARTIAL)
        if r.status_code != 429:
            break
        time.sleep(0.5)
    assert r.status_code == 201, (r.status_code, r.text)              # both places are free again
    after = snapshot(course)
    assert [h["sha256"] for h in after["handins"][attacker]] == [hashlib.sha256(CORRECT).hexdigest(),
                                                                  hashlib.sha256(PARTIAL).hexdigest()]
    assert after["feedback"] == before["feedback"]
    assert [(h["id"], h["sha256"]) for h in after["handins"][victim][:-1]] == \
        [(h["id"], h["sha256"]) for h in before["handins"][victim]]          # its own new one counts now


def _slow_to_check(cells: int = 50_000) -> bytes:
    """A notebook the grader refuses (too many cells) only after reading it all: seconds of a check thread."""
    nb = json.loads(CORRECT)
    nb["cells"] += [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [],
                     "execution_count": None}] * cells
    return json.dumps(nb).encode()


def test_a_hand_in_sent_before_the_deadline_is_on_time_however_long_the_checks_queue(make_course, tmp_path):
    """Classmates keep the grader's check threads busy: a hand-in is stamped when its body arrived, not when
    its check (and the answer) came, so a deadline that passes while it waits in the queue finds it on time.

    The deadline is placed after the fact, between the two moments the test saw, so what is checked does
    not hang on how fast this machine checks: only that the queue kept the answer waiting at all (a
    precondition, asserted with its own message) and that the stamp is the early moment, not the late one."""
    from concurrent.futures import ThreadPoolExecutor

    # four classmates, two slow hand-ins each (the most one student may have in flight): eight checks ahead
    # of the victim's, 4-9 s of checking on an idle 2-core machine; a busier machine only makes it longer
    course = make_course(students=5)
    victim, *busy = course.students
    teacher = course.client(course.instructors[0])
    slow = _slow_to_check()
    teacher.set_deadlines(course.id, {"ex02": (datetime.now(UTC) + timedelta(hours=1)).isoformat()})
    path = f"api/courses/{course.id}/handins/ex02_diagnose.ipynb"
    with ThreadPoolExecutor(len(busy) * 2 + 1) as pool:
        queue = [pool.submit(call, course, s, "POST", path, data=slow) for s in busy for _ in range(2)]
        time.sleep(1.5)                                               # the slow ones are first in line
        sent = datetime.now(UTC)
        h = course.client(victim).hand_in(course.id, tmp_path / "ex02_diagnose.ipynb", CORRECT)["handin"]
        answered = datetime.now(UTC)
        assert [f.result().status_code for f in queue] == [422] * len(queue)
    assert answered - sent > timedelta(seconds=1), "the checks were too quick to keep this hand-in waiting"
    received = datetime.fromisoformat(h["received"])
    assert sent - timedelta(seconds=1) <= received and received - sent < answered - received, \
        ("stamped when the check ended, not when the body came", sent, received, answered)
    assert not h["late"] and h["counts"], h
    # the deadline passed while the hand-in waited for its check: it is still on time, and it counts
    deadline = received + (answered - received) / 2
    teacher.set_deadlines(course.id, {"ex02": deadline.isoformat()})
    counted = teacher.collect(course.id)["counted"]
    assert [(x["id"], x["late"]) for x in counted] == [(h["id"], False)], counted


@pytest.mark.parametrize("body, words", [
    (b"[" * 100_000 + b"]" * 100_000, "nested more than"),
    (b'{"cells": "\xff\xfe"}', "not UTF-8"),
    (b"", "empty file"),
    (_slow_to_check(3000), "cells (limit"),
])
def test_malformed_notebooks_get_the_graders_reason(class_with_work, body, words):
    course, victim, attacker = class_with_work
    before = snapshot(course)
    r = call(course, attacker, "POST", f"api/courses/{course.id}/handins/ex02_diagnose.ipynb", data=body)
    refused(r, 422, "would reject", words)
    assert snapshot(course) == before and before["handins"][attacker] == []


def test_a_hand_in_id_past_sqlites_integers_is_not_found(class_with_work):
    course, victim, attacker = class_with_work
    prof = course.instructors[0]
    for hid in ("9" * 30, "0", str(1 << 63)):
        refused(call(course, prof, "GET", f"api/courses/{course.id}/handins/{hid}/file"), 404, "no hand-in")


def test_a_forged_or_borrowed_xsrf_token_is_no_identity(class_with_work):
    """The victim's cookie with an XSRF token that is not the one the exchange gave this session (made up,
    the hub's own page token, or the attacker's own valid one) is not signed in; with the session's own
    token the same request is (the grader then refuses the notebook: nothing is stored either way)."""
    course, victim, attacker = class_with_work
    before = snapshot(course)
    s, mine = _browser_session(course, victim), _browser_session(course, attacker)
    path = urlparse(course.hub.exchange_url).path
    own, hub_page = s.cookies.get("_xsrf", path=path), s.cookies.get("_xsrf", path="/hub/")
    borrowed = mine.cookies.get("_xsrf", path=path)
    assert own and borrowed and hub_page and len({own, borrowed, hub_page}) == 3, (own, borrowed, hub_page)
    url = course.hub.exchange_url + f"api/courses/{course.id}/handins/ex01_capture_boundary.ipynb"
    same_site = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
    refused(s.post(url, data=BROKEN, headers=same_site, timeout=60), 401, "not signed in")       # none at all
    for token in ("", "forged", own[:-2] + ("xx" if not own.endswith("xx") else "yy"), borrowed, hub_page):
        for how in ("X-XSRFToken", "X-CSRFToken", "_xsrf"):
            headers, params = dict(same_site), {}
            if how == "_xsrf":
                params["_xsrf"] = token                  # in the query (a streamed body is never parsed for it)
            else:
                headers[how] = token
            refused(s.post(url, data=BROKEN, headers=headers, params=params, timeout=60), 401, "not signed in")
    refused(s.post(url, data=BROKEN, headers={**same_site, "X-XSRFToken": own}, timeout=60), 422, "would reject")
    assert snapshot(course) == before


def _status(method: str, url: str, **kw) -> int | None:
    """The status of an answer, read as soon as its head arrives (stream=True: a server that answers and
    then resets the connection still has its answer read), or None when the connection was cut first."""
    try:
        with requests.request(method, url, stream=True, timeout=60, **kw) as r:
            return r.status_code
    except requests.ConnectionError:
        return None


@pytest.mark.parametrize("size", [20 << 10, 100 << 10, 2 << 20])
def test_oversized_headers_are_refused_and_the_service_goes_on(class_with_work, size):
    """A header block past what the proxy takes (node's 16 KiB) is refused by the proxy, 431, before the
    hub or the exchange sees it; straight at the exchange's own port, which a local user can reach, tornado takes up to
    64 KiB and hangs up past it. Either way the exchange still serves everyone, and nothing changed."""
    course, victim, attacker = class_with_work
    before = snapshot(course)
    pad = "a" * size
    token = {"Authorization": f"token {course.tokens[attacker]}"}
    upload = f"api/courses/{course.id}/handins/ex02_diagnose.ipynb"
    seen = {_status("POST", course.hub.exchange_url + upload, data=PARTIAL, headers={**token, "X-Pad": pad}),
            _status("GET", course.hub.exchange_url + "api/me", headers={**token, "Cookie": f"x={pad}"})}
    assert seen == {431}, seen
    status = _status("GET", course.hub.exchange_direct_url + "api/me", headers={**token, "X-Pad": pad})
    if size <= 60 << 10:                                 # under tornado's 64 KiB: an ordinary request
        assert status == 200, status
    else:
        assert status in (None, 400, 431), status
    assert course.client(victim).me()["user"] == victim            # the service still answers
    assert snapshot(course) == before
