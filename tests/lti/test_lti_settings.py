"""course_exchange.lti_settings (the settings file) and lti_launch's rules for roles and user names."""

from __future__ import annotations

import pytest

from course_exchange.courses import Role
from course_exchange.lti_settings import SettingsError, load

GOOD = '''[platform]
issuer = "https://canvas.instructure.com"
client_id = "10000000000042"
deployment_ids = ["17:8865aa05b4b79b64a91a86042e43af5ea8ae79eb", "18:other"]
auth_url = "https://sso.canvaslms.com/api/lti/authorize_redirect"
token_url = "https://sso.canvaslms.com/login/oauth2/token"
jwks_url = "https://sso.canvaslms.com/api/lti/security/jwks"

[tool]
username_claim = "custom_login_id"
private_key = "/etc/course-hub/lti-tool-key.pem"

[courses]
"f7a1c3d2e4b5" = "tcc"
"moodle-42" = "tcc-autumn"
'''


def write(tmp_path, text: str):
    path = tmp_path / "lti.toml"
    path.write_text(text)
    return path


def test_a_good_file_is_read_whole(tmp_path):
    s = load(write(tmp_path, GOOD))
    assert s.issuer == "https://canvas.instructure.com" and s.client_id == "10000000000042"
    assert s.deployment_ids == ("17:8865aa05b4b79b64a91a86042e43af5ea8ae79eb", "18:other")
    assert s.token_url.endswith("/login/oauth2/token") and s.jwks_url.endswith("/jwks")
    assert s.course_of("moodle-42") == "tcc-autumn" and s.course_of("unknown") is None and s.course_of(None) is None
    assert s.username_claim == "custom_login_id" and str(s.private_key) == "/etc/course-hub/lti-tool-key.pem"


def test_tool_and_courses_may_be_left_out(tmp_path):
    text = GOOD.split("[tool]")[0]
    s = load(write(tmp_path, text))
    assert s.username_claim == "sub" and s.private_key is None and s.courses == {}


@pytest.mark.parametrize("change, says", [
    (lambda t: t.replace('client_id = "10000000000042"\n', ""), "[platform] client_id is missing"),
    (lambda t: t.replace("client_id", "clientid"), "unknown key 'clientid' in [platform]"),
    (lambda t: t.replace("[courses]", "[course]"), "unknown section [course]"),
    (lambda t: t.replace('["17:8865aa05b4b79b64a91a86042e43af5ea8ae79eb", "18:other"]', '"17"'),
     "deployment_ids must be a list"),
    (lambda t: t.replace('"https://canvas.instructure.com"', "42"), "[platform] issuer must be a non-empty string"),
    (lambda t: t.replace("https://sso.canvaslms.com/login", "http://sso.canvaslms.com/login"),
     "[platform] token_url must be an https:// URL"),
    (lambda t: t.replace('"tcc-autumn"', '"TCC Autumn"'), "is not a course id"),
    (lambda t: t.replace('issuer = "https', 'issuer = https'), "not valid TOML"),
    (lambda t: t.replace("[platform]", "platform = 1\n[other]"), "unknown section [other]"),
], ids=["missing-key", "misspelt-key", "misspelt-section", "deployments-not-a-list", "issuer-not-text",
        "http-off-loopback", "bad-course-id", "toml-syntax", "extra-section"])
def test_a_wrong_file_says_what_and_where(tmp_path, change, says):
    path = write(tmp_path, change(GOOD))
    with pytest.raises(SettingsError) as caught:
        load(path)
    assert says in str(caught.value) and str(path) in str(caught.value)


def test_a_missing_file_says_how_to_make_one(tmp_path):
    with pytest.raises(SettingsError, match="no such file.*docs/hub-admins.md"):
        load(tmp_path / "nope.toml")


def test_http_is_allowed_on_loopback_only(tmp_path):
    text = GOOD.replace("https://sso.canvaslms.com", "http://127.0.0.1:8443")
    assert load(write(tmp_path, text)).auth_url == "http://127.0.0.1:8443/api/lti/authorize_redirect"


def test_course_roles_follow_the_lis_vocabulary():
    lti_launch = pytest.importorskip("course_exchange.lti_launch", reason="needs jupyterhub-ltiauthenticator")
    m = "http://purl.imsglobal.org/vocab/lis/v2/membership"
    role = lti_launch.course_role
    assert role([f"{m}#Learner"]) is Role.STUDENT
    assert role([f"{m}#Instructor"]) is Role.INSTRUCTOR
    assert role([f"{m}/Instructor#TeachingAssistant"]) is Role.INSTRUCTOR
    assert role([f"{m}#TeachingAssistant"]) is Role.INSTRUCTOR
    assert role([f"{m}#Learner", f"{m}#Instructor"]) is Role.INSTRUCTOR
    assert role(["Learner"]) is Role.STUDENT and role(["Instructor"]) is Role.INSTRUCTOR
    assert role([f"{m}/Learner#NonCreditLearner"]) is Role.STUDENT
    # a sub-role is a kind of its principal: a learner whose sub-role is named Instructor is a learner
    assert role([f"{m}/Learner#Instructor"]) is Role.STUDENT
    assert role([f"{m}/Mentor#TeachingAssistant"]) is None
    for none in ([], None, "Learner", [f"{m}#Mentor"], [f"{m}#ContentDeveloper"],
                 ["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"],
                 ["http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"]):
        assert role(none) is None, none


def test_hub_user_names_are_unix_names_and_never_collide():
    lti_launch = pytest.importorskip("course_exchange.lti_launch", reason="needs jupyterhub-ltiauthenticator")
    name = lti_launch.hub_username
    assert name("alice") == "alice" and name("Alice") == "alice" and name("hub-lti-bob") == "hub-lti-bob"
    made = [name(v) for v in ("alice@uni.edu", "alice-uni.edu", "5", "a" * 40,
                              "535fa085-f51b-4b4a-9b7f-1b9a6b2f5c5e", "Ö-ü")]
    assert len(set(made)) == len(made)
    for n in made:
        assert lti_launch.UNIX_NAME.fullmatch(n), n
    assert name("5").startswith("lti-5-") and name("alice@uni.edu").startswith("alice-uni.edu-")


def test_a_launch_name_cannot_be_made_to_equal_another_users():
    """From the raw claim (a custom field a student may edit): case, spaces and a copied hashed name do
    not give another user's name; only an exact valid name is kept as it is."""
    lti_launch = pytest.importorskip("course_exchange.lti_launch", reason="needs jupyterhub-ltiauthenticator")
    name = lti_launch.launch_username
    assert name("alice") == "alice"
    victim = name("5")
    assert victim.startswith("lti-5-") and lti_launch.UNIX_NAME.fullmatch(victim)
    for attempt in ("Alice", " alice", "alice ", "ALICE"):
        assert name(attempt) != "alice", attempt
    for attempt in (victim, victim.upper(), victim + " ", "5 ", "5!"):
        assert name(attempt) != victim, attempt
    assert name(victim) == name(victim) and lti_launch.hub_username(victim) == victim   # the hub's own pass


def test_two_lms_courses_cannot_share_one_hub_course(tmp_path):
    text = GOOD.replace('[courses]\n', '[courses]\n"section-b" = "tcc"\n')
    assert text != GOOD
    with pytest.raises(SettingsError, match="both map to 'tcc'"):
        load(write(tmp_path, text))


def test_the_example_in_the_admins_page_is_a_file_load_accepts(tmp_path):
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "hub-admins.md").read_text(encoding="utf-8")
    example = page.split("### The settings file", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    s = load(write(tmp_path, example))
    assert s.course_of("f7a1c3d2e4b5a6978d9c0b1a2f3e4d5c6b7a8f9e") == "tcc" and s.username_claim == "sub"


def test_the_modules_docstring_example_is_a_file_load_accepts(tmp_path):
    from course_exchange import lti_settings

    example = lti_settings.__doc__.split("::\n", 1)[1].split("\n\n``[platform]``", 1)[0]
    example = "\n".join(line[4:] for line in example.splitlines())
    assert load(write(tmp_path, example)).client_id == "10000000000042"
