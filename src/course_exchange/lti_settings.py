"""The hub's LTI 1.3 settings: one TOML file, read by :func:`load`, for the launch and for AGS.

The file is written once by the hub's admin (docs/hub-admins.md, "LTI 1.3"), from what the LMS shows
when the tool is registered there; the hub's config names it in ``COURSE_HUB_LTI``. Both the launch
(``course_exchange.lti_launch``, jupyterhub-ltiauthenticator) and the grade post (AGS) read it here::

    # /etc/course-hub/lti.toml
    [platform]                      # from the LMS
    issuer = "https://canvas.instructure.com"
    client_id = "10000000000042"
    deployment_ids = ["17:8865aa05b4b79b64a91a86042e43af5ea8ae79eb"]
    auth_url = "https://sso.canvaslms.com/api/lti/authorize_redirect"
    token_url = "https://sso.canvaslms.com/login/oauth2/token"
    jwks_url = "https://sso.canvaslms.com/api/lti/security/jwks"

    [tool]                          # this hub (all optional)
    username_claim = "sub"          # the id_token claim that names the hub user; "custom_NAME" for a custom field
    private_key = "/etc/course-hub/lti-tool-key.pem"   # the tool's key for AGS (made by its own command)

    [courses]                       # LTI context id -> course id (the hub groups course-<id>-...)
    "f7a1c3d2e4b5a6978d9c0b1a2f3e4d5c6b7a8f9e" = "tcc"

``[platform]`` names one LMS (one issuer, one client id) with one or more deployments of the tool.
A launch whose context id is not under ``[courses]`` is refused. Every key is checked here: a missing
file, a TOML syntax error, a missing or misspelt key, a value of the wrong type, an ``http://`` URL
off loopback or a course id the exchange would not accept each stop :func:`load` with a
:class:`SettingsError` that names the file, the key and the fix.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from .courses import course_id_problem

PLATFORM_KEYS = {
    "issuer": "the LMS's issuer (Canvas: https://canvas.instructure.com; Moodle: the site's URL)",
    "client_id": "the client id the LMS gave the tool (Canvas: the developer key's id)",
    "deployment_ids": "a list of the deployment ids of the tool in the LMS",
    "auth_url": "the LMS's OIDC authentication (authorization) endpoint",
    "token_url": "the LMS's OAuth2 access-token endpoint (for AGS)",
    "jwks_url": "the LMS's public keyset (JWKS) URL",
}
TOOL_KEYS = {
    "username_claim": "the id_token claim that names the hub user (default sub; custom_NAME: a custom field)",
    "private_key": "the tool's private key file, for AGS",
}
SECTIONS = {"platform", "tool", "courses"}
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
DEFAULT_USERNAME_CLAIM = "sub"


class SettingsError(Exception):
    """The settings file cannot be used; ``str(exc)`` names the file, what is wrong and the fix."""


@dataclass(frozen=True)
class LtiSettings:
    """One LMS (issuer, client id, deployments, its endpoints) and the context -> course mapping."""

    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    auth_url: str
    token_url: str
    jwks_url: str
    courses: dict[str, str] = field(default_factory=dict)
    username_claim: str = DEFAULT_USERNAME_CLAIM
    private_key: Path | None = None
    path: Path | None = None

    def course_of(self, context_id: str | None) -> str | None:
        """The course id an LTI context maps to, or None."""
        return self.courses.get(context_id) if context_id else None


def load(path: str | Path) -> LtiSettings:
    """The settings in ``path``; :class:`SettingsError` saying what to fix if they are not usable."""
    path = Path(path)
    where = f"LTI settings {path}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"{where}: no such file. Write it as docs/hub-admins.md (LTI 1.3) shows, "
                            "or point COURSE_HUB_LTI at it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{where}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{where}: not valid TOML: {exc}") from None
    for section in data:
        if section not in SECTIONS:
            raise SettingsError(f"{where}: unknown section [{section}] (the sections are "
                                f"{', '.join(f'[{s}]' for s in sorted(SECTIONS))})")
    platform = _table(data, "platform", where)
    tool = _table(data, "tool", where, required=False)
    courses = _table(data, "courses", where, required=False)
    _no_unknown(platform, PLATFORM_KEYS, "platform", where)
    _no_unknown(tool, TOOL_KEYS, "tool", where)
    values = {}
    for key, meaning in PLATFORM_KEYS.items():
        if key not in platform:
            raise SettingsError(f"{where}: [platform] {key} is missing: {meaning}")
    for key in ("issuer", "client_id", "auth_url", "token_url", "jwks_url"):
        values[key] = _text(platform[key], f"[platform] {key}", where)
    for key in ("issuer", "auth_url", "token_url", "jwks_url"):
        _url(values[key], f"[platform] {key}", where)
    ids = platform["deployment_ids"]
    if not isinstance(ids, list) or not ids:
        raise SettingsError(f"{where}: [platform] deployment_ids must be a list of at least one deployment id, "
                            f'e.g. deployment_ids = ["1"] (it is {ids!r})')
    deployments = tuple(_text(d, "[platform] deployment_ids", where) for d in ids)
    mapping = {}
    for context, course in courses.items():
        course = _text(course, f"[courses] {context!r}", where)
        if problem := course_id_problem(course):
            raise SettingsError(f"{where}: [courses] {context!r}: {problem}")
        if course in mapping.values():
            # one LMS course per hub course: the launches record the course's grade endpoint, which a
            # second LMS course (a section) would overwrite, sending every score to the last one launched
            other = next(c for c, v in mapping.items() if v == course)
            raise SettingsError(f"{where}: [courses] {context!r} and {other!r} both map to {course!r}: give "
                                "each LMS course (section) its own hub course id")
        mapping[context] = course
    claim = _text(tool.get("username_claim", DEFAULT_USERNAME_CLAIM), "[tool] username_claim", where)
    key = tool.get("private_key")
    private_key = Path(_text(key, "[tool] private_key", where)) if key is not None else None
    return LtiSettings(**values, deployment_ids=deployments, courses=mapping, username_claim=claim,
                       private_key=private_key, path=path)


def _table(data: dict, name: str, where: str, *, required: bool = True) -> dict:
    if name not in data:
        if required:
            raise SettingsError(f"{where}: section [{name}] is missing")
        return {}
    if not isinstance(data[name], dict):
        raise SettingsError(f"{where}: {name} must be a section, [{name}], not a value")
    return data[name]


def _no_unknown(table: dict, known: dict, section: str, where: str) -> None:
    for key in table:
        if key not in known:
            raise SettingsError(f"{where}: unknown key {key!r} in [{section}] (the keys are "
                                f"{', '.join(known)})")


def _text(value, what: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{where}: {what} must be a non-empty string in quotes (it is {value!r})")
    return value.strip()


def _url(value: str, what: str, where: str) -> None:
    url = urlparse(value)
    if url.scheme == "https" and url.netloc:
        return
    if url.scheme == "http" and url.hostname in LOOPBACK:
        return
    raise SettingsError(f"{where}: {what} must be an https:// URL (http:// only on this machine's loopback); "
                        f"it is {value!r}")
