"""``course grade post-scores`` against the real LTI 1.3 platform (tests/lti/platform.py) and a real hub.

A class is graded by ``course grade run`` (in the sandbox, as an instructor does it); the tool's key is
made by ``course lti-key``; the hub logs people in by LTI (tests/lti/lms_hub.py) and its exchange serves
the tool's JWKS, which the platform fetches through the hub's proxy to check every client assertion.
Four of the students launch the course from the LMS: their launches tell the hub their LMS user ids
and the course's line items URL, which is all post-scores is given. The scores are read back from the
platform's AGS results endpoint with a token the test asks for itself. The failure tests post to a
context of their own (``--lineitems``, ``--roster`` with the launches' ids).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import jwt
import pytest
import requests

from course_exchange.lti_launch import launch_username
from lti import lms_hub
from lti.platform import AGS_RESULT_READ, AGS_SCORE, CLIENT_ASSERTION_TYPE

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "samples" / "submissions"
COURSE = [str(Path(sys.executable).parent / "course")]
CLIENT_ID = lms_hub.CLIENT_ID
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
# who handed in what: (student, sample file, exercise notebook)
# the LMS user ids (sub) of the students who launch the course; not exact hub names (upper case), the
# hub names each by its safe form and a hash (lti_launch.launch_username), so name and sub differ
SUBS = ("LMS-Ada", "LMS-Bob", "LMS-Cy", "LMS-Dee", "LMS-Eve")
ADA, BOB, CY, DEE, EVE = (launch_username(sub) for sub in SUBS)
ROSTER = {launch_username(sub): sub for sub in SUBS[:4]}
CLASS = [(ADA, "correct__ex01_capture_boundary", "ex01_capture_boundary"),
         (ADA, "correct__ex02_diagnose", "ex02_diagnose"),
         (BOB, "unanswered__ex01_capture_boundary", "ex01_capture_boundary"),
         (CY, "tamper-edit-test__ex01_capture_boundary", "ex01_capture_boundary"),    # flagged
         (DEE, "correct__ex06_check_understanding", "ex06_check_understanding"),      # written answers
         (EVE, "correct__ex01_capture_boundary", "ex01_capture_boundary")]            # never launched


def course(*args, env=None, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([*COURSE, *map(str, args)], capture_output=True, text=True, timeout=1800, cwd=ROOT,
                       env={**os.environ, **(env or {})})
    if check and r.returncode != 0:
        raise AssertionError(f"course {' '.join(map(str, args))}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


@pytest.fixture(scope="module")
def keys():
    """The tool's key, made by ``course lti-key`` in a folder the exchange's own user can pass."""
    folder = Path(tempfile.mkdtemp(prefix="course-lti-key-"))
    os.chmod(folder, 0o755)      # the JWKS beside the key is public; the key itself is 0600
    made = course("lti-key", folder / "tool-key.pem")
    yield folder / "tool-key.pem", made
    shutil.rmtree(folder)


@pytest.fixture(scope="module")
def lms_and_hub(keys, tmp_path_factory):
    """The platform and a hub logging in by LTI, whose exchange serves the tool's JWKS (the platform's
    token endpoint fetches it through the hub's proxy); the class's students launch the course once.
    The hub finds the keyset beside the key the settings name: no COURSE_LTI_JWKS is given."""
    folder = tmp_path_factory.mktemp("lti-hub")
    with lms_hub.platform_and_hub(folder, settings_extra=f'[tool]\nprivate_key = "{keys[0]}"\n') as (lms, hub):
        # the same registration as lms_hub's, with the exchange's JWKS URL as the tool's
        lms.register_tool(client_id=lms_hub.CLIENT_ID, deployment_id=lms_hub.DEPLOYMENT_ID,
                          login_url=f"{hub.url}hub/lti13/oauth_login",
                          redirect_uris=[f"{hub.url}hub/lti13/oauth_callback"],
                          target_link_uri=f"{hub.url}hub/", jwks_url=f"{hub.url}services/course-exchange/lti/jwks.json")
        for sub in ROSTER.values():
            session = requests.Session()
            form = lms_hub.launch_form(session, lms.start_url(sub, ["Learner"], lms_hub.CONTEXT, lms_hub.TITLE, "rl"))
            assert lms_hub.post_form(session, form).status_code == 302
        yield lms, hub, folder


@pytest.fixture(scope="module")
def lms(lms_and_hub):
    return lms_and_hub[0]


@pytest.fixture(scope="module")
def hub(lms_and_hub):
    return lms_and_hub[1]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class graded by ``course grade run``; one file names no student."""
    base = tmp_path_factory.mktemp("class")
    subs = base / "handins"
    subs.mkdir()
    for student, sample, name in CLASS:
        (subs / f"{student}__{name}.ipynb").write_bytes((SAMPLES / f"{sample}.ipynb").read_bytes())
    (subs / "stray.ipynb").write_bytes((SAMPLES / "correct__ex01_capture_boundary.ipynb").read_bytes())
    out = base / "graded"
    unconfined = ["--unconfined"] if os.geteuid() else []     # not root: the weaker sandbox (docs/sandbox.md)
    course("grade", "run", subs, "--out", out, "--no-progress", *unconfined, check=False)
    assert (out / "gradebook.sqlite").is_file()
    return out


@pytest.fixture
def setup(tmp_path, graded, lms_and_hub):
    """A fresh copy of the graded folder; the command's arguments as on the hub (settings, the hub's state)."""
    lms, hub, folder = lms_and_hub
    out = tmp_path / "graded"
    shutil.copytree(graded, out)
    return {"out": out, "context": lms_hub.CONTEXT, "settings": folder / "lti.toml",
            "args": [out, "--settings", folder / "lti.toml", "--hub-state", folder / "state"]}


@pytest.fixture
def fresh(setup, lms, tmp_path):
    """The same, posting to a context of its own (``--lineitems``) with the ids the launches gave (``--roster``)."""
    context = f"ctx-{uuid.uuid4().hex[:8]}"
    roster = tmp_path / "roster.csv"
    roster.write_text("student,lti_user_id\n" + "".join(f"{s},{u}\n" for s, u in ROSTER.items()), encoding="utf-8")
    return {**setup, "context": context, "roster": roster,
            "args": [*setup["args"], "--lineitems", lms.lineitems_url(context), "--roster", roster]}


def post(setup, *extra, check=True):
    return course("grade", "post-scores", *setup["args"], *extra, check=check)


def token(lms, keys, scope: str) -> str:
    """An access token asked for by hand (RFC 7523), with the tool's key: not through the code under test."""
    key = keys[0].read_text()
    kid = json.loads(Path(f"{keys[0]}.jwks.json").read_text())["keys"][0]["kid"]
    now = int(time.time())
    assertion = jwt.encode({"iss": CLIENT_ID, "sub": CLIENT_ID, "aud": lms.token_url, "iat": now, "exp": now + 60,
                            "jti": uuid.uuid4().hex}, key, algorithm="RS256", headers={"kid": kid})
    r = requests.post(lms.token_url, timeout=60, data={
        "grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
        "client_assertion": assertion, "scope": scope})
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


def read_back(lms, keys, context: str) -> dict[tuple[str, str], tuple[float, float]]:
    """``{(exercise, LMS user): (score, maximum)}`` from the platform's AGS results endpoint."""
    bearer = token(lms, keys, AGS_RESULT_READ)
    got = {}
    for item in lms.lineitems(context):
        r = requests.get(f"{item['id']}/results", timeout=60,
                         headers={"Authorization": f"Bearer {bearer}", "Accept": RESULTS_TYPE})
        assert r.status_code == 200, r.text
        for result in r.json():
            got[(item["resourceId"], result["userId"])] = (result["resultScore"], result["resultMaximum"])
    return got


def posts(out: Path) -> list[tuple]:
    db = sqlite3.connect(out / "gradebook.sqlite")
    try:
        return db.execute("SELECT student, exercise, lms_user, given, maximum, how, posted_at FROM lms_posts "
                          "ORDER BY id").fetchall()
    finally:
        db.close()


def grades(out: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """The final scores as the gradebook has them (graded, nothing to review)."""
    db = sqlite3.connect(out / "gradebook.sqlite")
    try:
        rows = db.execute("SELECT a.student, a.exercise, a.auto_score, a.auto_possible FROM current c JOIN attempts a "
                          "ON a.key = c.key WHERE a.status = 'graded' AND a.manual_possible = 0").fetchall()
    finally:
        db.close()
    return {(s, e): (g, m) for s, e, g, m in rows}


def test_the_key_is_0600_and_never_printed(keys, hub):
    path, made = keys
    assert path.stat().st_mode & 0o777 == 0o600
    pem = path.read_text()
    body = pem.split("-----")[2].strip().splitlines()
    assert "PRIVATE KEY" in pem and len(body) > 10
    assert not any(line in made.stdout + made.stderr for line in body)
    again = course("lti-key", path, check=False)                 # never overwritten
    assert again.returncode == 2 and path.read_text() == pem and "exists" in again.stderr
    served = requests.get(f"{hub.url}services/course-exchange/lti/jwks.json", timeout=60)   # public, no login
    assert served.status_code == 200
    assert served.json() == json.loads(Path(f"{path}.jwks.json").read_text())
    assert not {"d", "p", "q"} & set(served.json()["keys"][0])
    assert not any(line in hub.log_text() for line in body)


def test_a_graded_class_is_posted_from_the_launches_read_back_and_a_second_post_changes_nothing(setup, lms, keys):
    dry = post(setup, "--dry-run")
    assert "dry run: nothing was posted" in dry.stdout
    assert "will post 3 new and 0 changed" in dry.stdout, dry.stdout
    assert lms.lineitems(setup["context"]) == [] and lms.scores(setup["context"]) == []
    assert posts(setup["out"]) == []

    first = post(setup)
    # the skipped are named with why, and the file that named no student is counted
    assert f"skipped: {CY} ex01: flagged" in first.stdout
    assert f"skipped: {DEE} ex06: written answers still to review" in first.stdout
    assert f"skipped: {EVE} ex01: no LTI user id" in first.stdout
    assert "never posted: 1 file(s) that named no student" in first.stdout
    assert "posted 3 (3 new, 0 changed), 0 unchanged, 3 skipped" in first.stdout, first.stdout
    want = expected(setup["out"])
    assert set(want) == {("ex01", "LMS-Ada"), ("ex02", "LMS-Ada"), ("ex01", "LMS-Bob")}     # the launches' sub
    assert want[("ex01", "LMS-Ada")][0] > 0 and want[("ex01", "LMS-Bob")][0] == 0
    assert read_back(lms, keys, setup["context"]) == want
    assert sorted(i["resourceId"] for i in lms.lineitems(setup["context"])) == ["ex01", "ex02"]
    recorded = posts(setup["out"])
    assert [(s, e, how) for s, e, _, _, _, how, _ in recorded] == [(ADA, "ex01", "posted"), (ADA, "ex02", "posted"),
                                                                   (BOB, "ex01", "posted")]
    sent = len(lms.scores(setup["context"]))
    body = keys[0].read_text().split("-----")[2].strip().splitlines()
    assert not any(line in dry.stdout + first.stdout + first.stderr for line in body)     # the key is never shown

    second = post(setup)
    assert "will post 0 new and 0 changed; 3 unchanged" in second.stdout, second.stdout
    assert len(lms.scores(setup["context"])) == sent            # nothing sent
    assert read_back(lms, keys, setup["context"]) == want
    assert posts(setup["out"]) == recorded                       # nothing new to record
    assert len(lms.lineitems(setup["context"])) == 2             # no second line item


def expected(out: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """What the LMS should hold: the gradebook's final scores of the launched students, by (exercise, sub)."""
    return {(e, ROSTER[s]): g for (s, e), g in grades(out).items() if s in ROSTER}


def test_a_changed_score_in_the_lms_is_put_back(fresh, lms, keys):
    post(fresh)
    item = next(i for i in lms.lineitems(fresh["context"]) if i["resourceId"] == "ex01")
    # another score for bob reaches the LMS (by its AGS, later): the next post says so and puts the grader's back
    r = requests.post(f"{item['id']}/scores", timeout=60, json={
        "userId": "LMS-Bob", "scoreGiven": 5, "scoreMaximum": 8, "activityProgress": "Completed",
        "gradingProgress": "FullyGraded", "timestamp": datetime.now(UTC).isoformat()},
        headers={"Authorization": f"Bearer {token(lms, keys, AGS_SCORE)}", "Content-Type": SCORE_TYPE})
    assert r.status_code in (200, 201), r.text
    assert read_back(lms, keys, fresh["context"])[("ex01", "LMS-Bob")][0] == 5
    again = post(fresh)
    assert "will post 0 new and 1 changed" in again.stdout, again.stdout
    assert read_back(lms, keys, fresh["context"]) == expected(fresh["out"])


def test_the_lms_failing_part_way_loses_nothing_and_a_rerun_posts_the_rest(fresh, lms, keys):
    # ada ex01 goes to line item 1, then ada ex02 to line item 2: that post fails, bob's is never sent
    lms.fail_next(1, status=503, path_part=f"/{fresh['context']}/lineitems/2/scores")
    failed = post(fresh, check=False)
    assert failed.returncode == 1
    assert f"stopped at {ADA} ex02" in failed.stderr and "HTTP 503" in failed.stderr, failed.stderr
    assert "2 score(s) not posted" in failed.stderr and "Run the same command again" in failed.stderr
    assert [(s, e) for s, e, *_ in posts(fresh["out"])] == [(ADA, "ex01")]
    assert set(read_back(lms, keys, fresh["context"])) == {("ex01", "LMS-Ada")}

    rerun = post(fresh)
    assert "will post 2 new and 0 changed; 1 unchanged" in rerun.stdout, rerun.stdout
    assert [(s, e) for s, e, *_ in posts(fresh["out"])] == [(ADA, "ex01"), (ADA, "ex02"), (BOB, "ex01")]
    assert read_back(lms, keys, fresh["context"]) == expected(fresh["out"])


def test_an_expired_token_is_renewed_and_a_timeout_is_left_for_the_next_run(fresh, lms, keys, monkeypatch):
    from course_exchange.ags import client as ags_client
    from course_exchange.ags.command import read_roster
    from course_exchange.ags.post import run
    from course_exchange.ags.tool_key import load_private
    from course_exchange.ags.where import target_for
    from course_grader.api import LmsScores

    target, _, key = target_for(None, None, settings_file=fresh["settings"], lineitems=fresh["args"][6])
    client = ags_client.AgsClient(target, load_private(key))
    users = read_roster(fresh["roster"])
    assert client.line_items() == {}                 # a token is granted and used
    lms.expire_access_tokens()                        # ... and the LMS stops taking it (401 'expired')
    monkeypatch.setattr(ags_client, "REQUEST_TIMEOUT_S", 2.0)
    lms.hang_next(1, 6.0, path_part=f"/{fresh['context']}/lineitems/2/scores")   # ada ex02's answer comes too late
    with LmsScores(fresh["out"]) as book:
        assert run(book, client, users, dry_run=False) == 1
        assert list(book.posts()) == [(ADA, "ex01")]
    with LmsScores(fresh["out"]) as book:
        assert run(book, client, users, dry_run=False) == 0
        assert sorted(book.posts()) == [(ADA, "ex01"), (ADA, "ex02"), (BOB, "ex01")]
    assert read_back(lms, keys, fresh["context"]) == expected(fresh["out"])
