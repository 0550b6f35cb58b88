"""Courses are hub groups: ``course-<ID>-students`` and ``course-<ID>-instructors``.

A course exists on a hub when one of its two groups does; a user's role in a course is which of the two
groups the hub says they are in (instructor wins when both). Several courses live on one hub, each with
its own groups. Group names are the hub's, so an administrator creates and fills them with the hub's
admin page, its REST API, or ``c.JupyterHub.load_groups``.
"""

from __future__ import annotations

import re
from enum import StrEnum

COURSE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}\Z")
COURSE_ID_RULE = "lower-case ASCII letters, digits and '-'; at most 40, starting with a letter or digit"
GROUP = re.compile(r"^course-([a-z0-9][a-z0-9-]{0,39})-(students|instructors)\Z")


class Role(StrEnum):
    STUDENT = "student"
    INSTRUCTOR = "instructor"


def course_id_problem(course: str) -> str:
    """"" for a well-formed course id, else why not."""
    return "" if COURSE_ID.fullmatch(course) else f"{course!r} is not a course id ({COURSE_ID_RULE})"


def students_group(course: str) -> str:
    return f"course-{course}-students"


def instructors_group(course: str) -> str:
    return f"course-{course}-instructors"


def roles_from_groups(groups: list[str]) -> dict[str, Role]:
    """``{course: role}`` from a user's hub groups; other groups are ignored."""
    roles: dict[str, Role] = {}
    for g in groups:
        m = GROUP.fullmatch(g)
        if not m:
            continue
        course, kind = m.groups()
        if kind == "instructors":
            roles[course] = Role.INSTRUCTOR
        else:
            roles.setdefault(course, Role.STUDENT)
    return roles
