"""``course grade post-scores`` against the real LTI 1.3 platform (tests/lti/platform.py) and a real hub.

A class is graded by ``course grade run`` (in the sandbox, as an instructor does it); the tool's key is
made by ``course lti-key``; the hub's exchange serves its JWKS, which the platform fetches through the
hub's proxy to check every client assertion. The scores are read back from the platform's AGS results
endpoint with a token of our own asking.
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
from hubtools import hub_fixture

from lti.platform import AGS_RESULT_READ, AGS_SCORE, CLIENT_ASSERTION_TYPE, Platform

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "samples" / "submissions"
COURSE = [str(Path(sys.executable).parent / "course")]
CLIENT_ID = "course-hub-tool"
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
# who handed in what: (student, sample file, exercise notebook)
CLASS = [("ada", "correct__ex01_capture_boundary", "ex01_capture_boundary"),
         ("ada", "correct__ex02_diagnose", "ex02_diagnose"),
         ("bob", "unanswered__ex01_capture_boundary", "ex01_capture_boundary"),
         ("cy", "tamper-edit-test__ex01_capture_boundary", "ex01_capture_boundary"),    # flagged
         ("dee", "correct__ex06_check_understanding", "ex06_check_understanding"),      # written answers
         ("eve", "correct__ex01_capture_boundary", "ex01_capture_boundary")]            # never launched
ROSTER = {"ada": "lms-user-ada", "bob": "lms-user-bob", "cy": "lms-user-cy", "dee": "lms-user-dee"}


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


hub = hub_fixture()     # module-scoped; its environment gets COURSE_LTI_JWKS from the keys fixture (below)


@pytest.fixture(scope="module")
def hub_env(keys, monkeypatch_module):
    monkeypatch_module.setenv("COURSE_LTI_JWKS", f"{keys[0]}.jwks.json")


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def lms(hub_env, hub):
    with Platform() as platform:
        platform.register_tool(client_id=CLIENT_ID, deployment_id="d1", login_url=f"{hub.url}hub/lti13/oauth_login",
                               redirect_uris=[f"{hub.url}hub/lti13/oauth_callback"],
                               jwks_url=f"{hub.url}services/course-exchange/lti/jwks.json")
        yield platform


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
    course("grade", "run", subs, "--out", out, "--no-progress", check=False)
    assert (out / "gradebook.sqlite").is_file()
    return out


@pytest.fixture
def setup(tmp_path, graded, keys, lms):
    """A fresh copy of the graded folder, a fresh LMS context, the settings file and the roster."""
    out = tmp_path / "graded"
    shutil.copytree(graded, out)
    context = f"ctx-{uuid.uuid4().hex[:8]}"
    settings = tmp_path / "lti.toml"
    settings.write_text(f"""[platform]
issuer = "{lms.issuer}"
client_id = "{CLIENT_ID}"
deployment_ids = ["d1"]
auth_url = "{lms.auth_url}"
token_url = "{lms.token_url}"
jwks_url = "{lms.jwks_url}"

[tool]
private_key = "{keys[0]}"

[courses]
"{context}" = "tcc"
""", encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text("student,lti_user_id\n" + "".join(f"{s},{u}\n" for s, u in ROSTER.items()), encoding="utf-8")
    args = [out, "--settings", settings, "--lineitems", lms.lineitems_url(context), "--roster", roster]
    return {"out": out, "context": context, "args": args, "settings": settings}


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


def test_the_key_is_0600_and_never_printed(keys, hub_env, hub):
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


def test_dry_run_posts_nothing(setup, lms):
    r = post(setup, "--dry-run")
    assert "dry run: nothing was posted" in r.stdout
    assert "will post 3 new and 0 changed" in r.stdout, r.stdout
    assert lms.lineitems(setup["context"]) == [] and lms.scores(setup["context"]) == []
    assert posts(setup["out"]) == []


def test_a_graded_class_is_posted_read_back_and_a_second_post_changes_nothing(setup, lms, keys):
    first = post(setup)
    # the skipped are named with why, and the file that named no student is counted
    assert "skipped: cy ex01: flagged" in first.stdout
    assert "skipped: dee ex06: written answers still to review" in first.stdout
    assert "skipped: eve ex01: no LTI user id" in first.stdout
    assert "never posted: 1 file(s) that named no student" in first.stdout
    assert "posted 3 (3 new, 0 changed), 0 unchanged, 3 skipped" in first.stdout, first.stdout
    want = {(e, ROSTER[s]): g for (s, e), g in grades(setup["out"]).items() if s in ROSTER}
    assert set(want) == {("ex01", "lms-user-ada"), ("ex02", "lms-user-ada"), ("ex01", "lms-user-bob")}
    assert want[("ex01", "lms-user-ada")][0] > 0 and want[("ex01", "lms-user-bob")][0] == 0
    assert read_back(lms, keys, setup["context"]) == want
    assert sorted(i["resourceId"] for i in lms.lineitems(setup["context"])) == ["ex01", "ex02"]
    recorded = posts(setup["out"])
    assert [(s, e, how) for s, e, _, _, _, how, _ in recorded] == [("ada", "ex01", "posted"), ("ada", "ex02", "posted"),
                                                                   ("bob", "ex01", "posted")]
    sent = len(lms.scores(setup["context"]))
    body = keys[0].read_text().split("-----")[2].strip().splitlines()
    assert not any(line in first.stdout + first.stderr for line in body)     # the key is never shown

    second = post(setup)
    assert "will post 0 new and 0 changed; 3 unchanged" in second.stdout, second.stdout
    assert len(lms.scores(setup["context"])) == sent            # nothing sent
    assert read_back(lms, keys, setup["context"]) == want
    assert posts(setup["out"]) == recorded                       # nothing new to record
    assert len(lms.lineitems(setup["context"])) == 2             # no second line item


def test_a_changed_score_in_the_lms_is_put_back(setup, lms, keys):
    post(setup)
    item = next(i for i in lms.lineitems(setup["context"]) if i["resourceId"] == "ex01")
    with_other = post(setup, "--dry-run")
    assert "3 unchanged" in with_other.stdout
    # another score for bob reaches the LMS (by its AGS, later): the next post says so and puts the grader's back
    r = requests.post(f"{item['id']}/scores", timeout=60, json={
        "userId": "lms-user-bob", "scoreGiven": 5, "scoreMaximum": 8, "activityProgress": "Completed",
        "gradingProgress": "FullyGraded", "timestamp": datetime.now(UTC).isoformat()},
        headers={"Authorization": f"Bearer {token(lms, keys, AGS_SCORE)}", "Content-Type": SCORE_TYPE})
    assert r.status_code in (200, 201), r.text
    assert read_back(lms, keys, setup["context"])[("ex01", "lms-user-bob")][0] == 5
    again = post(setup)
    assert "will post 0 new and 1 changed" in again.stdout, again.stdout
    assert read_back(lms, keys, setup["context"])[("ex01", "lms-user-bob")][0] == 0


def test_the_lms_failing_part_way_loses_nothing_and_a_rerun_posts_the_rest(setup, lms, keys):
    # ada ex01 goes to line item 1, then ada ex02 to line item 2: that post fails, bob's is never sent
    lms.fail_next(1, status=503, path_part="/lineitems/2/scores")
    failed = post(setup, check=False)
    assert failed.returncode == 1
    assert "stopped at ada ex02" in failed.stderr and "HTTP 503" in failed.stderr, failed.stderr
    assert "2 score(s) not posted" in failed.stderr and "Run the same command again" in failed.stderr
    assert [(s, e) for s, e, *_ in posts(setup["out"])] == [("ada", "ex01")]
    assert set(read_back(lms, keys, setup["context"])) == {("ex01", "lms-user-ada")}

    rerun = post(setup)
    assert "will post 2 new and 0 changed; 1 unchanged" in rerun.stdout, rerun.stdout
    assert [(s, e) for s, e, *_ in posts(setup["out"])] == [("ada", "ex01"), ("ada", "ex02"), ("bob", "ex01")]
    want = {(e, ROSTER[s]): g for (s, e), g in grades(setup["out"]).items() if s in ROSTER}
    assert read_back(lms, keys, setup["context"]) == want


def test_an_expired_token_is_renewed_and_a_timeout_is_left_for_the_next_run(setup, lms, keys, monkeypatch):
    from course_exchange.ags import client as ags_client
    from course_exchange.ags.command import read_roster
    from course_exchange.ags.post import run
    from course_exchange.ags.tool_key import load_private
    from course_exchange.ags.where import target_for
    from course_grader.api import LmsScores

    target, _, key = target_for(None, None, settings_file=setup["settings"], lineitems=setup["args"][4])
    client = ags_client.AgsClient(target, load_private(key))
    users = read_roster(setup["args"][6])
    assert client.line_items() == {}                 # a token is granted and used
    lms.expire_access_tokens()                        # ... and the LMS stops taking it (401 'expired')
    monkeypatch.setattr(ags_client, "REQUEST_TIMEOUT_S", 2.0)
    lms.hang_next(1, 6.0, path_part="/lineitems/2/scores")      # ada ex02's answer comes too late
    with LmsScores(setup["out"]) as book:
        assert run(book, client, users, dry_run=False) == 1
        assert [(p[0], p[1]) for p in book.posts()] == [("ada", "ex01")]
    with LmsScores(setup["out"]) as book:
        assert run(book, client, users, dry_run=False) == 0
        assert sorted(book.posts()) == [("ada", "ex01"), ("ada", "ex02"), ("bob", "ex01")]
    want = {(e, ROSTER[s]): g for (s, e), g in grades(setup["out"]).items() if s in ROSTER}
    assert read_back(lms, keys, setup["context"]) == want
