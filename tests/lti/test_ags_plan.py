"""What post-scores decides for each score (course_exchange/ags/plan.py) and the JWKS it serves (ags/jwks.py)."""

from __future__ import annotations

import json

import pytest

from course_exchange.ags.jwks import public_key_set
from course_exchange.ags.plan import NO_LMS_ID, State, decide
from course_exchange.ags.tool_key import ToolKeyError, create, jwks_path, load_private
from course_grader.api import FinalScore


def score(student, exercise="ex01", given=2.0, maximum=3.0, withheld=""):
    return FinalScore(student, exercise, "Title", f"key-{student}", given, maximum, withheld)


def test_each_score_is_new_changed_unchanged_or_skipped_with_why():
    items = {"ex01": {"id": "http://lms/li/1", "resourceId": "ex01"}}
    results = {"ex01": {"u-ada": {"resultScore": 2.0, "resultMaximum": 3.0},
                        "u-bob": {"resultScore": 1.0, "resultMaximum": 3.0},
                        "u-dee": {"resultScore": 20.0, "resultMaximum": 30.0}}}   # the same score, rescaled
    users = {"ada": "u-ada", "bob": "u-bob", "cy": "u-cy", "dee": "u-dee", "fay": "u-fay"}
    planned, skipped = decide([score("ada"), score("bob"), score("cy"), score("dee"), score("eve"),
                               score("fay", withheld="flagged: ..."), score("ada", "ex02")], users, items, results)
    states = {(p.score.student, p.score.exercise): p.state for p in planned}
    assert states == {("ada", "ex01"): State.UNCHANGED, ("bob", "ex01"): State.CHANGED, ("cy", "ex01"): State.NEW,
                      ("dee", "ex01"): State.UNCHANGED, ("ada", "ex02"): State.NEW}
    assert next(p for p in planned if p.score.student == "bob").lms_had == "1/3"
    assert next(p for p in planned if p.score.exercise == "ex02").line_item is None    # to be created
    assert {(k.student, k.reason) for k in skipped} == {("eve", NO_LMS_ID), ("fay", "flagged: ...")}


def test_the_key_is_made_0600_never_overwritten_and_refused_when_others_can_read_it(tmp_path):
    path = tmp_path / "key.pem"
    public = create(path)
    assert path.stat().st_mode & 0o777 == 0o600 and jwks_path(path).stat().st_mode & 0o777 == 0o644
    assert json.loads(jwks_path(path).read_text())["keys"] == [public] and public["kid"]
    assert "PRIVATE KEY" in load_private(path)
    with pytest.raises(ToolKeyError, match="exists"):
        create(path)
    path.chmod(0o640)
    with pytest.raises(ToolKeyError, match="readable by others"):
        load_private(path)


def test_only_public_keys_are_served(tmp_path):
    path = tmp_path / "key.pem"
    public = create(path)
    assert public_key_set(jwks_path(path).read_text()) == {"keys": [public]}
    for text in (path.read_text(), json.dumps({"keys": [{**public, "d": "x"}]}), "{}"):
        with pytest.raises(ValueError):
            public_key_set(text)


def test_a_file_planted_beside_the_key_is_never_written_as_the_keyset(tmp_path):
    """Someone who can write in the key's folder plants the keyset's temporary file (theirs, 0666): the
    keyset served is still a new file holding the tool's own public key (no open of a planted name)."""
    path = tmp_path / "tool-key.pem"
    planted = tmp_path / f".{jwks_path(path).name}.tmp"
    planted.write_text('{"keys": [{"kid": "attacker"}]}')
    planted.chmod(0o666)
    public = create(path)
    served = jwks_path(path)
    assert json.loads(served.read_text())["keys"] == [public]
    assert served.stat().st_ino != planted.stat().st_ino and oct(served.stat().st_mode & 0o777) == "0o644"
    assert json.loads(planted.read_text())["keys"] == [{"kid": "attacker"}]
