"""An LTI 1.3 launch from the LMS as a hub login: jupyterhub-ltiauthenticator, plus the course's checks.

jupyterhub-ltiauthenticator (``ltiauthenticator.lti13``) does the LTI: the third-party-initiated login
(``/hub/lti13/oauth_login``: state and nonce in encrypted cookies, a redirect to the LMS's auth URL),
the launch (``/hub/lti13/oauth_callback``: the id_token's RS256 signature against the LMS's JWKS,
issuer, audience, exp/nbf/iat, state cookie against the form's state, nonce against the cookie's
hash, the required LTI claims). What it does not check, and this module adds in the smallest hook
it offers (why, each):

- **the deployment id** (its login handler says it is "not used anywhere"): a launch from a
  deployment the settings do not list is refused; an LMS admin may install the tool in more
  places than the course's admin agreed to (``CourseLTI13CallbackHandler``);
- **a replayed nonce**: its nonce check compares the id_token with the nonce cookie, and the cookie
  is only cleared in the browser; a captured form re-posted with the captured cookies would log
  in again. Each nonce is accepted once while its token could still pass the age check
  (``max_age``); kept in the hub's memory, so a hub restart forgets them (the cookie secret survives
  a restart: a form captured in the ten minutes before one could be replayed once after it);
- **the role and the course**: the LMS's roles decide the course role (Learner: student;
  Instructor, its sub-roles and TeachingAssistant: instructor; any other: refused), and the
  launch's context id must map to a course in the settings' ``[courses]``, or it is refused.
  The user is put in the hub group ``course-<id>-students`` or ``course-<id>-instructors`` of that
  course (``Authenticator.manage_groups``; the user's groups of other courses are kept), which is
  where the exchange reads course and role (``course_exchange.courses``);
- **cookies for a cross-site POST**: on https its state and nonce cookies are set ``SameSite=None;
  Secure``, so that the LMS's form post carries them (``CourseLTI13LoginInitHandler``).

Every refusal is a page of the hub saying what was wrong and what to do, given before the user is
created: no user, no server, no session cookie (the login initiation's too: opened by hand, without
the LMS's arguments, it says the hub is entered by the course's link in the LMS).

A good launch records the AGS endpoint claim (``https://purl.imsglobal.org/spec/lti-ags/claim/endpoint``:
``lineitems``, ``scope``) for the course: in the user's ``auth_state`` (``lti_course``, ``lti_role``,
``ags_endpoint``, beside the id_token's claims) and, for the grade post, in
``<COURSE_HUB_STATE>/lti/ags/<course>.json`` (``AGS_FILE_KEYS``; the hub's own folder, 0700): the
endpoint, and ``members``, each launched user's hub name with their LTI ``sub`` (AGS's ``userId``)
and role. It is rewritten when a launch changes it.

The hub's user name is the settings' ``username_claim`` (default ``sub``), as :func:`hub_username`
makes it safe for a Unix account (users mode creates one on the first launch).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

from jupyterhub.auth import LocalAuthenticator
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from tornado.web import HTTPError
from traitlets import Unicode

from .courses import GROUP, Role, instructors_group, students_group
from .lti_settings import LtiSettings, load

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
INSTRUCTOR_ROLES = {"Instructor", "TeachingAssistant"}
STUDENT_ROLES = {"Learner"}
AGS_FILE_KEYS = ("course", "context_id", "context_title", "issuer", "client_id", "deployment_id",
                 "lineitems", "lineitem", "scope", "members", "updated")   # members: {hub name: {sub, role}}
UNIX_NAME = re.compile(r"^[a-z][a-z0-9._-]{0,31}\Z")
UNIX_NAME_MAX = 32
NAME_HASH_CHARS = 16        # 64 bits of SHA-256: no one finds a value that shares another's name
AGAIN = ("Open the course again from your course site (the LMS). If this page comes back, "
         "tell your instructor what it says.")


class LaunchRefused(HTTPError):
    """A launch the hub will not log in; ``jupyterhub_message`` is the page's text."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(status, why.replace("%", "%%"))
        self.jupyterhub_message = f"The launch from your course site was refused: {why}. {AGAIN}"


def course_role(roles) -> Role | None:
    """The course role of an LTI roles claim: instructor if any context role is Instructor (or one of
    its sub-roles, ``membership/Instructor#X``) or TeachingAssistant, else student if any is Learner
    (or a sub-role of it), else None. Institution and system roles name no course role."""
    if not isinstance(roles, list):
        return None
    names = set()
    for role in roles:
        if not isinstance(role, str):
            continue
        if role.startswith(MEMBERSHIP + "#"):
            names.add(role.split("#", 1)[1])
        elif role.startswith(MEMBERSHIP + "/"):
            # a sub-role is a kind of its principal role: Learner#Instructor is a learner, and only
            # Instructor's own sub-roles (Instructor#TeachingAssistant) make an instructor
            principal, _, sub = role[len(MEMBERSHIP) + 1:].partition("#")
            names.add(principal)
            if principal == "Instructor" and sub:
                names.add(sub)
        elif "/" not in role and "#" not in role:
            names.add(role)        # LTI 1.3 allows a context role's short name (deprecated)
    if names & INSTRUCTOR_ROLES:
        return Role.INSTRUCTOR
    if names & STUDENT_ROLES:
        return Role.STUDENT
    return None


HASHED_NAME = re.compile(rf"-[0-9a-f]{{{NAME_HASH_CHARS}}}\Z")
SYSTEM_UID_MAX = 999     # accounts below Debian's UID_MIN (1000): root, daemons, the exchange's own user


def launch_username(value: str) -> str:
    """The hub name of an LMS user from the raw claim: the value itself only when it is exactly a valid
    name (no case folded, nothing stripped) and does not look like a hashed one; else the safe form and
    a hash of the whole value. So "Alice", " alice" and "lti-5-<hash of 5>" never become "alice" or
    user 5's name: a student who can change the claim (a custom field) cannot take another's account."""
    if UNIX_NAME.fullmatch(value) and not HASHED_NAME.search(value):
        return value
    tag = hashlib.sha256(value.encode()).hexdigest()[:NAME_HASH_CHARS]
    safe = re.sub(r"[^a-z0-9._-]+", "-", value.strip().lower()).strip("-._")
    if not safe or not safe[0].isalpha():
        safe = "lti-" + safe
    return f"{safe[:UNIX_NAME_MAX - NAME_HASH_CHARS - 1].rstrip('-._')}-{tag}"


def hub_username(value: str) -> str:
    """A hub (and Unix) user name for an LMS user: the value itself, lower case, when it already is a
    valid one (a letter, then letters, digits, '.', '_', '-', at most 32); else its safe characters
    and a hash of the whole value, so two different values never share a name."""
    lowered = value.strip().lower()
    if UNIX_NAME.fullmatch(lowered):
        return lowered
    tag = hashlib.sha256(value.encode()).hexdigest()[:NAME_HASH_CHARS]
    safe = re.sub(r"[^a-z0-9._-]+", "-", lowered).strip("-._")
    if not safe or not safe[0].isalpha():
        safe = "lti-" + safe
    return f"{safe[:UNIX_NAME_MAX - NAME_HASH_CHARS - 1].rstrip('-._')}-{tag}"


class UsedNonces:
    """Each nonce once, for ``keep`` seconds (past that, the id_token fails ltiauthenticator's age check)."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def first_use(self, nonce: str, keep: float) -> bool:
        now = time.monotonic()
        for old in [n for n, until in self._until.items() if until < now]:
            del self._until[old]
        if nonce in self._until:
            return False
        self._until[nonce] = now + keep
        return True


class CourseLTI13LoginInitHandler(LTI13LoginInitHandler):
    """ltiauthenticator's login initiation, with the hub's page when it is opened other than by the LMS,
    and, on https, state and nonce cookies that come back with the LMS's cross-site POST.

    ltiauthenticator sets them with no SameSite attribute, which browsers read as Lax: a Lax cookie is
    not sent with a POST from another site, which the launch is (the LMS's form posts to the hub);
    Chromium sends it anyway only in the first two minutes (its "Lax+POST" allowance). On https they are
    set ``SameSite=None; Secure`` (a browser takes SameSite=None only with Secure, so not on http)."""

    def _set_oauth_cookie(self, key: str, value) -> None:
        if self.authenticator.get_uri_scheme(self.request) != "https":
            super()._set_oauth_cookie(key, value)
            return
        self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True, secure=True,
                         samesite="None")

    def post(self):
        try:
            super().post()
        except HTTPError as exc:
            raise LaunchRefused(exc.status_code, f"{exc.log_message}; this hub is entered by the course's "
                                                 "link in the LMS") from exc

    get = post


class CourseLTI13CallbackHandler(LTI13CallbackHandler):
    """ltiauthenticator's launch handler, with the deployment and nonce-replay checks, and clear pages."""

    async def post(self):
        try:
            await super().post()
        except LaunchRefused:
            raise
        except HTTPError as exc:
            raise LaunchRefused(exc.status_code, exc.log_message or "the launch is not valid") from exc

    def decode_and_validate_launch_request(self):
        id_token = super().decode_and_validate_launch_request()
        settings = self.authenticator.lti_settings
        deployment = id_token.get(DEPLOYMENT_CLAIM)
        if deployment not in settings.deployment_ids:
            raise LaunchRefused(403, f"the tool's deployment {deployment!r} in the LMS is not one this hub "
                                     "was set up for (its LTI settings list the deployment ids)")
        return id_token

    def check_nonce(self, id_token):
        super().check_nonce(id_token)
        keep = self.authenticator.nonce_memory_seconds()
        if not self.authenticator.used_nonces.first_use(id_token["nonce"], keep):
            raise LaunchRefused(400, "this launch was already used once (a replayed nonce)")


class CourseLTI13Authenticator(LTI13Authenticator):
    """LTI13Authenticator configured from the hub's LTI settings file, with the course's role rules."""

    login_handler = CourseLTI13LoginInitHandler
    callback_handler = CourseLTI13CallbackHandler

    lti_settings_file = Unicode(config=True, help="The LTI settings file (course_exchange.lti_settings).")
    ags_dir = Unicode(config=True, help="Where the AGS endpoint of each course is written (<course>.json).")

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.used_nonces = UsedNonces()
        self._settings: LtiSettings | None = None

    @property
    def lti_settings(self) -> LtiSettings:
        if self._settings is None:
            self._settings = load(self.lti_settings_file)
        return self._settings

    def nonce_memory_seconds(self) -> float:
        from ltiauthenticator.lti13.validator import LTI13LaunchValidator

        validator = LTI13LaunchValidator(parent=self)
        return float(validator.max_age + 2 * validator.time_leeway + 60)

    def normalize_username(self, username: str) -> str:
        return hub_username(username)

    async def authenticate(self, handler, data=None):
        claims = data or {}
        role = course_role(claims.get(ROLES_CLAIM))
        if role is None:
            raise LaunchRefused(403, "the LMS gave no course role this hub knows (Learner, Instructor or "
                                     "TeachingAssistant) for you in this course")
        context = claims.get(CONTEXT_CLAIM) if isinstance(claims.get(CONTEXT_CLAIM), dict) else {}
        course = self.lti_settings.course_of(context.get("id"))
        if course is None:
            title = context.get("title") or "(no title)"
            raise LaunchRefused(403, f"the LMS course {title!r} (context id {context.get('id')!r}) is not "
                                     "set up on this hub: its admin maps LMS courses to hub courses in the "
                                     "LTI settings, [courses]")
        model = await super().authenticate(handler, claims)
        name = launch_username(str(model["name"]))
        self._refuse_reserved(name)
        group = instructors_group(course) if role is Role.INSTRUCTOR else students_group(course)
        endpoint = claims.get(AGS_CLAIM) if isinstance(claims.get(AGS_CLAIM), dict) else None
        model["name"] = name
        model["groups"] = self._groups_after_launch(handler, name, course, group)
        model["auth_state"] = {**model["auth_state"], "lti_course": course, "lti_role": str(role),
                               "ags_endpoint": endpoint}
        self._record_launch(course, context, claims, endpoint, name, role)
        self.log.info("LTI launch: %s is %s of course %s", name, role, course)
        return model

    def _refuse_reserved(self, name: str) -> None:
        """No launch logs in as a system account (root, a daemon, the exchange's own user)."""
        import pwd

        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            return
        if uid <= SYSTEM_UID_MAX:
            raise LaunchRefused(403, f"the LMS user name {name!r} is a system account on this hub's machine")

    def _groups_after_launch(self, handler, name: str, course: str, group: str) -> list[str]:
        """The user's groups with this course's role replaced by the launch's (other courses' kept)."""
        user = handler.find_user(name)
        kept = []
        for g in (user.groups if user is not None else []):
            match = GROUP.fullmatch(g.name)
            if not (match and match.group(1) == course):
                kept.append(g.name)
        return sorted({*kept, group})

    def _record_launch(self, course: str, context: dict, claims: dict, endpoint: dict | None, name: str,
                       role: Role) -> None:
        """``<ags_dir>/<course>.json``: the course's AGS endpoint and its members' LTI user ids, rewritten
        (whole, then renamed into place) only when a launch changes them."""
        if not self.ags_dir:
            return
        folder = Path(self.ags_dir)
        path = folder / f"{course}.json"
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        endpoint = endpoint or {}
        record = {"course": course, "context_id": context.get("id"), "context_title": context.get("title"),
                  "issuer": claims.get("iss"), "client_id": self.lti_settings.client_id,
                  "deployment_id": claims.get(DEPLOYMENT_CLAIM),
                  "lineitems": endpoint.get("lineitems", old.get("lineitems")),
                  "lineitem": endpoint.get("lineitem", old.get("lineitem")),
                  "scope": endpoint.get("scope", old.get("scope", [])),
                  "members": {**(old.get("members") or {}), name: {"sub": claims.get("sub"), "role": str(role)}}}
        if {k: old.get(k) for k in record} == record:
            return
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        record["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(partial, path)


class CourseLTI13LocalAuthenticator(CourseLTI13Authenticator, LocalAuthenticator):
    """The same, for a hub whose servers run as Unix users: the user's account is created on the first
    launch (``LocalAuthenticator.create_system_users``), named by :func:`hub_username`."""


CRYPT_KEY_FILE = "lti-auth-state.key"   # in the hub's state folder, 0600: the key of auth_state (CryptKeeper)


def configure(c, settings_file: str | Path, *, state: Path, unix_users: bool) -> LtiSettings:
    """LTI 1.3 logins on the hub's config ``c``, from the settings file (read now: a bad file stops the
    hub's start with :class:`~course_exchange.lti_settings.SettingsError`'s message)."""
    settings = load(settings_file)
    cls = CourseLTI13LocalAuthenticator if unix_users else CourseLTI13Authenticator
    c.JupyterHub.authenticator_class = f"{__name__}.{cls.__name__}"
    c.LTI13Authenticator.issuer = settings.issuer
    c.LTI13Authenticator.client_id = {settings.client_id}
    c.LTI13Authenticator.authorize_url = settings.auth_url
    c.LTI13Authenticator.jwks_endpoint = settings.jwks_url
    c.LTI13Authenticator.username_key = settings.username_claim
    c.CourseLTI13Authenticator.lti_settings_file = str(Path(settings_file).resolve())
    c.CourseLTI13Authenticator.ags_dir = str(Path(state) / "lti" / "ags")
    c.Authenticator.allow_all = True           # who may log in is the launch's checks' decision (above)
    c.Authenticator.manage_groups = True       # the launch sets the course group
    c.JupyterHub.load_groups = {}              # JupyterHub refuses load_groups beside manage_groups
    c.Authenticator.enable_auth_state = True
    if not os.environ.get("JUPYTERHUB_CRYPT_KEY"):   # JupyterHub reads that one itself
        c.CryptKeeper.keys = [crypt_key(Path(state))]
    if unix_users:
        c.LocalAuthenticator.create_system_users = True
    return settings


def crypt_key(state: Path) -> bytes:
    """The hub's auth_state key, made once (32 random bytes, hex) in its state folder, 0600."""
    path = state / CRYPT_KEY_FILE
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(os.urandom(32).hex() + "\n")
    return bytes.fromhex(path.read_text().strip())
