"""Every exception of the exchange, in one tree: the service's refusals, each with its HTTP status, and
the client's error (the words are each instance's message).

    CourseExchangeError
    ├── Refused               the service will not carry out a request (``str(exc)`` is what the caller
    │   │                     is told, ``status`` its HTTP status)
    │   ├── BadRequest        400: bad JSON, a bad name, a field that is not allowed
    │   ├── NotSignedIn       401: no hub token or cookie, or the hub did not recognise it
    │   ├── Forbidden         403: not a member (or not an instructor) of that course
    │   ├── NotFound          404
    │   ├── NotAllowedMethod  405
    │   ├── TooLarge          413
    │   ├── GraderRefuses     422: the grader's static steps would refuse this notebook
    │   └── TooMany           429: rate limit or storage cap
    └── ExchangeError         the client's: the exchange refused, or could not be reached
"""

from __future__ import annotations


class CourseExchangeError(Exception):
    """Anything the exchange (service or client) raises of its own."""


class Refused(CourseExchangeError):
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


class ExchangeError(CourseExchangeError):
    """The exchange refused, or could not be reached; ``str()`` says why in the service's words."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status
