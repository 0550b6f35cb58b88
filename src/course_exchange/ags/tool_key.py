"""The tool's own key pair for LTI Advantage services: ``course lti-key PATH``.

The LMS gives a tool an OAuth2 access token for its Assignment and Grade Services only against a
client assertion: a JWT the tool signs with its private key (RS256), which the LMS checks with the
public key it fetched from the tool's JWKS URL (the exchange service serves it, see
:mod:`course_exchange.service`).

* ``PATH`` holds the private key (PEM, PKCS#8). It is created with mode 0600 by ``os.open`` (never
  written first and closed after), refused when it already exists, and its text is never printed or
  logged: the command prints the public side only (key id and JWKS path).
* ``PATH.jwks.json`` beside it holds the public JWK set (mode 0644): the file the exchange serves, so
  the service never needs to read the private key.
* The key id (``kid``) is the public key's RFC 7638 thumbprint: the assertion's header names it, and
  the LMS picks the key of that id from the JWKS.

What this module does not do: rotate keys (a second key needs the old one served until the LMS has
stopped using it; make a new PATH and register its JWKS instead).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto import jwk

KEY_BITS = 2048                  # RS256 with 2048-bit keys: what the LTI security framework asks for
KEY_MODE = 0o600
JWKS_MODE = 0o644
JWKS_SUFFIX = ".jwks.json"
JWKS_ROUTE = "lti/jwks.json"     # under the exchange service's prefix, unauthenticated


class ToolKeyError(Exception):
    """A key file that cannot be made or read; the text says which and why (never the key)."""


def jwks_path(key_path: Path) -> Path:
    return Path(f"{key_path}{JWKS_SUFFIX}")


def public_jwk(private_pem: bytes) -> dict:
    """The public JWK of a private key (PEM), with its thumbprint as ``kid``, ``alg`` RS256 and ``use`` sig."""
    key = jwk.JWK.from_pem(private_pem)
    public = json.loads(key.export_public())
    public.update(kid=key.thumbprint(), alg="RS256", use="sig")
    return public


def create(path: Path) -> dict:
    """Make a new key pair: the private key at ``path`` (0600 from its creation) and its JWKS beside it.
    Returns the public JWK. Raises :class:`ToolKeyError` when ``path`` exists (nothing is overwritten)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ToolKeyError(f"{path.parent} is not a folder: make it first")
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, KEY_MODE)
    except FileExistsError:
        raise ToolKeyError(f"{path} exists: it was not changed (a tool key is never overwritten; give a new "
                           "path, and register its JWKS with the LMS)") from None
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    public = public_jwk(pem)
    target = jwks_path(path)
    # a new file of a random name (O_EXCL): a file planted beside the key by someone who can write there is
    # never opened, so the keyset the exchange serves is the one written here
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.fchmod(fd, JWKS_MODE)     # public, for the service's user, whatever the umask
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"keys": [public]}, out, indent=1)
    os.replace(tmp, target)
    return public


def load_private(path: Path) -> str:
    """The private key's PEM text, for signing; refused when others may read the file."""
    path = Path(path)
    try:
        st = path.stat()
        pem = path.read_bytes()
    except OSError as exc:
        raise ToolKeyError(f"cannot read the tool key {path}: {exc.strerror} (make one with course lti-key "
                           f"{path})") from None
    if st.st_mode & 0o077:
        raise ToolKeyError(f"{path} is readable by others (mode {st.st_mode & 0o777:o}): it must be 0600; "
                           "treat it as leaked, make a new one and register its JWKS")
    try:
        public_jwk(pem)
    except (ValueError, TypeError):
        raise ToolKeyError(f"{path} holds no private key in PEM form") from None
    return pem.decode("ascii")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="course lti-key", allow_abbrev=False, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path, help="where the private key goes (created 0600; never overwritten)")
    args = p.parse_args(argv)
    try:
        public = create(args.path)
    except ToolKeyError as exc:
        print(f"course lti-key: {exc}", file=sys.stderr)
        return 2
    print(f"tool key: {args.path} (private, mode 0600; keep it so, and out of every repository)")
    print(f"public JWKS: {jwks_path(args.path)} (key id {public['kid']})")
    print(f"to use it: start the hub with COURSE_LTI_JWKS={jwks_path(args.path)}; register "
          f"https://HUB/services/course-exchange/{JWKS_ROUTE} as the tool's JWKS URL in the LMS; name the key in "
          f'the hub\'s LTI settings ([tool] private_key = "{args.path}"); docs/grading.md, "Posting scores"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
