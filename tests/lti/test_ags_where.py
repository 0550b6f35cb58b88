"""Where post-scores finds the platform, the line items and the students' LMS ids (course_exchange/ags/where.py),
and its usage errors: each says what is missing and nothing is posted."""

from __future__ import annotations

import json

import pytest

from course_exchange.ags.command import main, read_roster
from course_exchange.ags.where import AGS_DIR, WhereError, lms_users, target_for

SETTINGS = """[platform]
issuer = "https://lms.example.edu"
client_id = "tool-1"
deployment_ids = ["d1"]
auth_url = "https://lms.example.edu/auth"
token_url = "https://lms.example.edu/token"
jwks_url = "https://lms.example.edu/jwks"

[tool]
private_key = "/etc/course-hub/lti-tool-key.pem"

[courses]
"ctx-1" = "tcc"
"""


@pytest.fixture
def hub(tmp_path):
    settings = tmp_path / "lti.toml"
    settings.write_text(SETTINGS, encoding="utf-8")
    state = tmp_path / "state"
    return settings, state


def test_the_target_comes_from_the_settings_and_the_last_launch(hub):
    settings, state = hub
    with pytest.raises(WhereError, match="open the course from the LMS once, or give --lineitems"):
        target_for(None, None, settings_file=settings, hub_state=state)
    (state / AGS_DIR).mkdir(parents=True)
    (state / AGS_DIR / "tcc.json").write_text(json.dumps({"course": "tcc", "context_id": "ctx-1",
                                                          "lineitems": "https://lms.example.edu/li"}))
    target, course, key = target_for(None, None, settings_file=settings, hub_state=state)
    assert (target.issuer, target.client_id, target.token_url, target.lineitems_url) == (
        "https://lms.example.edu", "tool-1", "https://lms.example.edu/token", "https://lms.example.edu/li")
    assert course == "tcc" and str(key) == "/etc/course-hub/lti-tool-key.pem"
    with pytest.raises(WhereError, match="not in the LTI settings"):
        target_for("other", None, settings_file=settings, hub_state=state)


def test_the_launches_members_give_the_lms_ids_and_the_roster_adds_to_them(hub, tmp_path):
    _, state = hub
    assert lms_users("tcc", hub_state=state) == {}
    (state / AGS_DIR).mkdir(parents=True)
    (state / AGS_DIR / "tcc.json").write_text(json.dumps({"course": "tcc", "members": {
        "ada": {"sub": "sub-ada", "role": "student"}, "lti-5-1a2b3c4d": {"sub": "5", "role": "student"},
        "broken": {"role": "student"}}}))
    assert lms_users("tcc", hub_state=state) == {"ada": "sub-ada", "lti-5-1a2b3c4d": "5"}
    roster = tmp_path / "roster.csv"
    roster.write_text("student,lti_user_id\nbob,sub-bob-2\n", encoding="utf-8")
    assert read_roster(roster) == {"bob": "sub-bob-2"}
    roster.write_text("student,id\nbob,x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="header"):
        read_roster(roster)


def test_usage_errors_post_nothing_and_say_why(hub, tmp_path, capsys, monkeypatch):
    settings, state = hub
    monkeypatch.delenv("COURSE_HUB_LTI", raising=False)
    assert main([str(tmp_path / "graded")]) == 2
    assert "COURSE_HUB_LTI" in capsys.readouterr().err
    args = [str(tmp_path / "graded"), "--settings", str(settings), "--lineitems", "https://lms.example.edu/li"]
    assert main(args) == 2                             # the settings' key file does not exist
    assert "course lti-key" in capsys.readouterr().err
    from course_exchange.ags.tool_key import create

    create(tmp_path / "key.pem")
    assert main([*args, "--key", str(tmp_path / "key.pem")]) == 2
    err = capsys.readouterr().err
    assert "no gradebook" in err and "nothing was posted" in err and not (tmp_path / "graded").exists()
