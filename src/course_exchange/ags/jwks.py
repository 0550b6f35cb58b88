"""The tool's public JWKS, served by the exchange at ``lti/jwks.json`` under its prefix, to anyone.

The LMS fetches it to check the client assertions ``course grade post-scores`` signs (see
:mod:`.tool_key`). It is public by design: no hub login, no cookie, no XSRF. The file is named by
``COURSE_LTI_JWKS`` in the service's environment (``PATH.jwks.json`` beside the key ``course lti-key PATH``
made) and read on each request, so a key made after the hub started is served without a restart.

Only public RSA keys are served: a file that holds anything else (a private key's parameters, a PEM,
no ``keys`` list) is refused with 500 and a line in the service's log, never passed on.
"""

from __future__ import annotations

import json
import os

from tornado import web

ENV = "COURSE_LTI_JWKS"
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}
MAX_BYTES = 64 * 1024
CACHE_S = 300                 # an LMS may keep the key set this long


def public_key_set(text: str) -> dict:
    """The JWKS in ``text``, or ValueError when it is not a set of public keys only."""
    data = json.loads(text)
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list) or not keys:
        raise ValueError("no 'keys' list")
    for key in keys:
        if not isinstance(key, dict) or key.get("kty") != "RSA" or PRIVATE_MEMBERS & set(key):
            raise ValueError("a key that is not a public RSA key")
    return {"keys": keys}


class JwksHandler(web.RequestHandler):
    def get(self):
        path = os.environ.get(ENV, "")
        if not path:
            raise web.HTTPError(404, f"no tool key set: {ENV} is not set for the exchange")
        try:
            with open(path, encoding="utf-8") as f:
                keys = public_key_set(f.read(MAX_BYTES + 1)[:MAX_BYTES])
        except OSError as exc:
            raise web.HTTPError(500, f"{ENV}={path}: cannot be read ({exc.strerror})") from None
        except ValueError as exc:
            raise web.HTTPError(500, f"{ENV}={path}: not a public JWKS ({exc}); not served") from None
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", f"public, max-age={CACHE_S}")
        self.finish(json.dumps(keys))
