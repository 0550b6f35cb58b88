"""Every cap and rate of the exchange, named once (docs/exchange.md's "what is refused" quotes these).

The upload cap sits above the grader's own file cap (5 MiB) so that a file the grader would refuse for
its size gets the grader's words, and anything far larger is cut off by the exchange before it is read.
"""

MAX_UPLOAD_BYTES = 8 << 20          # a hand-in's body; larger: 413, refused from Content-Length or mid-stream
MAX_FEEDBACK_BYTES = 16 << 20       # one student's returned pages (JSON), per request
MAX_JSON_BYTES = 64 << 10           # any other JSON body (deadlines)
MAX_STORED_BYTES_PER_USER = 200 << 20   # all of one student's hand-ins in one course; then 429
MAX_HANDINS_PER_USER = 500          # hand-ins of one student in one course; then 429
RATE_HANDINS = 30                   # hand-ins a user may make ...
RATE_WINDOW_S = 60.0                # ... in this many seconds (a sliding window); then 429
LINGER_S = 5.0                      # after refusing a body, how long the rest is read and dropped
GROUPS_CACHE_S = 5.0                # how long the hub's answer about a user's groups is reused
CHECK_WORKERS = 2                   # threads that run the grader's static check (the machine's cores)
