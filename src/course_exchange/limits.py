"""Every cap and rate of the exchange, named once (docs/exchange.md's "what is refused" quotes these).

The upload cap sits above the grader's own file cap (5 MiB) so that a file the grader would refuse for
its size gets the grader's words, and anything far larger is cut off by the exchange before it is read.

``$COURSE_EXCHANGE_LIMITS`` (JSON, e.g. ``{"MAX_HANDINS_PER_USER": 1000}``) overrides any of these names
for a class that needs other figures; hub_config.configure() passes it from the hub's environment to
the service. An unknown name or a value of the wrong type stops the service with the reason.
"""

import json as _json
import os as _os

MAX_UPLOAD_BYTES = 8 << 20          # a hand-in's body; larger: 413, refused from Content-Length or mid-stream
MAX_FEEDBACK_BYTES = 16 << 20       # one student's returned pages (JSON), per request
MAX_JSON_BYTES = 64 << 10           # any other JSON body (deadlines)
MAX_STORED_BYTES_PER_USER = 200 << 20   # all of one student's hand-ins in one course; then 429
MAX_HANDINS_PER_USER = 500          # hand-ins of one student in one course; then 429
RATE_HANDINS = 30                   # hand-ins a user may make ...
RATE_WINDOW_S = 60.0                # ... in this many seconds (a sliding window); then 429
LINGER_S = 5.0                      # after refusing a body, how long the rest is read and dropped
GROUPS_CACHE_S = 5.0                # how long the hub's answer about a user's groups is reused
AUTH_CACHE_S = 5.0                  # how long the hub's answer about a token is reused (a revoked one: refused after)
UPLOADS_IN_FLIGHT_PER_USER = 2      # one user's hand-ins being received or checked at once; then 429
CHECK_WORKERS = 2                   # threads that run the grader's static check (the machine's cores)


def _override() -> None:
    raw = _os.environ.get("COURSE_EXCHANGE_LIMITS")
    if not raw:
        return
    wanted = _json.loads(raw)
    for name, value in wanted.items():
        current = globals().get(name)
        if not name.isupper() or current is None or type(value) not in (int, float) or \
                (isinstance(current, int) and not isinstance(value, int)):
            raise ValueError(f"COURSE_EXCHANGE_LIMITS: {name}={value!r} is not a limit of the exchange "
                             f"(names: {', '.join(n for n in globals() if n.isupper())})")
        globals()[name] = value


_override()
