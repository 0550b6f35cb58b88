"""The exchange's refusals: each kind with its HTTP status; the words are the instance's message."""

from __future__ import annotations


class Refused(Exception):
    """A request the exchange will not carry out. ``str(exc)`` is what the caller is told."""

    status = 400


class BadRequest(Refused):
    status = 400       # malformed: bad JSON, a bad name, a field that is not allowed


class NotSignedIn(Refused):
    status = 401       # no hub token or cookie, or the hub did not recognise it


class Forbidden(Refused):
    status = 403       # signed in, but not a member (or not an instructor) of that course


class NotFound(Refused):
    status = 404


class NotAllowedMethod(Refused):
    status = 405


class GraderRefuses(Refused):
    status = 422       # the grader's static steps would refuse this notebook (course submit's words)


class TooLarge(Refused):
    status = 413


class TooMany(Refused):
    status = 429       # rate limit or storage cap
