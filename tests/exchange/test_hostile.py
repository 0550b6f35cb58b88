"""Hostile students through the real hub and its proxy: each attempt gets a clear refusal, and nothing of
anyone else changes (the course's whole state, as its instructor sees it, is compared before and after)."""

import http.client
import json
import select
from urllib.parse import urlparse

import pytest
import requests

from conftest import SAMPLES

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
                 data=PARTIAL), 400, "exNN_slug.ipynb")
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
    r = raw(course, attacker, method, f"api/courses/{course.id}/{path}", PARTIAL)
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


def _service_pid(hub) -> int:
    from hubtools import _leftovers

    for pid in _leftovers(hub.state):
        if b"course_exchange.service" in open(f"/proc/{pid}/cmdline", "rb").read():
            return pid
    raise AssertionError("no exchange process")


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
    pid = _service_pid(course.hub)
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
    local = course.course(attacker, "submit", bad, "--student", attacker, "--out", tmp_path / "handin")
    assert local.returncode == 1
    words = (local.stdout + local.stderr).split(f"would reject {bad}: ", 1)[1].strip()
    hub = course.course(attacker, "submit", bad)
    assert hub.returncode == 1
    assert f"would reject {bad.name}: {words}" in hub.stderr, (hub.stderr, words)


def test_a_browser_without_login_is_sent_to_the_hub(class_with_work):
    course, victim, attacker = class_with_work
    r = requests.get(course.hub.exchange_url + f"courses/{course.id}/feedback/", allow_redirects=False, timeout=60)
    assert r.status_code == 302 and "/hub/api/oauth2/authorize" in r.headers["Location"]
