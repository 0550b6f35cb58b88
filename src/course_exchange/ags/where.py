"""Where a course's scores go, and who each student is in the LMS: from the hub's LTI settings and launches.

* The platform (issuer, client id, token URL) and the tool's key file: the hub's LTI settings file
  (:mod:`course_exchange.lti_settings`; ``COURSE_HUB_LTI``, or ``--settings``).
* The course's context and its AGS line items URL: what the last launch of the course brought in its
  AGS endpoint claim, which the hub's launch writes to ``<COURSE_HUB_STATE>/lti/ags/<course>.json``
  (:mod:`course_exchange.lti_launch`), or ``--lineitems URL``.
* Each student's LMS user id (the id_token's ``sub``, which an AGS score names): the same record's
  ``members`` (``{hub user name: {"sub": ..., "role": ...}}``, one entry per user who launched the
  course), since the hub user name may be a transformed ``sub`` or another claim and cannot be turned
  back into it.

Every gap is a :class:`WhereError` that says which file or option gives what is missing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from course_exchange.lti_settings import SettingsError, load

from .client import AgsTarget

SETTINGS_ENV = "COURSE_HUB_LTI"
STATE_ENV = "COURSE_HUB_STATE"
AGS_DIR = Path("lti") / "ags"      # as lti_launch.configure sets the authenticator's ags_dir


class WhereError(Exception):
    """Something post-scores needs is not known; the text says where it comes from."""


def _state(hub_state: Path | None) -> Path | None:
    value = hub_state or os.environ.get(STATE_ENV)
    return Path(value) if value else None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise WhereError(f"{path} cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise WhereError(f"{path} is not a JSON object")
    return data


def target_for(course: str | None, key: Path | None, *, settings_file: Path | None = None,
               hub_state: Path | None = None, lineitems: str | None = None) -> tuple[AgsTarget, str, Path]:
    """``(target, course, key file)`` for ``course`` (default: the settings' only course)."""
    path = settings_file or os.environ.get(SETTINGS_ENV)
    if not path:
        raise WhereError(f"the hub's LTI settings are not given: set {SETTINGS_ENV} as the hub has it, or "
                         "give --settings FILE")
    try:
        settings = load(path)
    except SettingsError as exc:
        raise WhereError(str(exc)) from None
    courses = sorted(set(settings.courses.values()))
    if course is None:
        if len(courses) != 1:
            raise WhereError(f"give --course: the LTI settings map {len(courses)} courses "
                             f"({', '.join(courses) or 'none'}) under [courses]")
        course = courses[0]
    elif course not in courses:
        raise WhereError(f"course {course!r} is not in the LTI settings' [courses] ({', '.join(courses) or 'none'})")
    if not lineitems:
        state = _state(hub_state)
        record = _read_json(state / AGS_DIR / f"{course}.json") if state else {}
        lineitems = record.get("lineitems")
        if not lineitems:
            where = state / AGS_DIR / f"{course}.json" if state else f"${STATE_ENV}/{AGS_DIR}/{course}.json"
            raise WhereError(f"no line items URL for course {course}: a launch from the LMS brings it (none is "
                             f"recorded in {where}); open the course from the LMS once, or give --lineitems URL")
    key = key or settings.private_key
    if not key:
        raise WhereError("no tool key: give --key PATH, or [tool] private_key in the LTI settings "
                         "(course lti-key PATH makes one)")
    return AgsTarget(settings.issuer, settings.client_id, settings.token_url, lineitems), course, Path(key)


def lms_users(course: str, *, hub_state: Path | None = None) -> dict[str, str]:
    """``{hub user name: LMS user id}`` of the course's launches so far (empty when none is recorded)."""
    state = _state(hub_state)
    if not state:
        return {}
    members = _read_json(state / AGS_DIR / f"{course}.json").get("members") or {}
    return {str(name): str(m["sub"]) for name, m in members.items() if isinstance(m, dict) and m.get("sub")}
