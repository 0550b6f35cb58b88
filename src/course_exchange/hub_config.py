"""``configure(c, ...)``: the exchange in a JupyterHub configuration (``jupyterhub_config.py``).

It adds, to the config object ``c``:

* the managed service ``course-exchange`` (the hub starts and stops it; ``python -m course_exchange.service``),
  listening on 127.0.0.1 at ``port``, storing under ``storage``, optionally as another Unix ``user``
  (the hub must then run as root, as TLJH's does);
* the role ``course-exchange`` for the service itself: ``read:users:name`` and ``read:users:groups``, all
  it needs to learn a caller's courses (their groups) from the hub;
* access for every user: the default ``user`` role gets ``access:services!service=course-exchange`` (what
  a user may do there is the service's decision, by their groups), and so does the ``server`` role, whose
  scopes become a user's server token (``$JUPYTERHUB_API_TOKEN`` in Lab's terminal);
* ``COURSE_EXCHANGE_URL`` in every single-user server's environment, where ``course submit`` finds it.

Roles already listed in ``c.JupyterHub.load_roles`` are kept; a ``user`` or ``server`` role given there
keeps its scopes and gains the access scope.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SERVICE_NAME = "course-exchange"
ACCESS_SCOPE = f"access:services!service={SERVICE_NAME}"
SERVICE_SCOPES = ["read:users:name", "read:users:groups"]
DEFAULT_USER_SCOPES = ["self"]
DEFAULT_SERVER_SCOPES = ["users:activity!user", "access:servers!server"]
START_TIMEOUT_S = 300    # the service reads the course's exercises first: ~25 s on 2 busy cores, JupyterHub waits 30


def _role(roles: list[dict], name: str, default_scopes: list[str]) -> dict:
    for role in roles:
        if role.get("name") == name:
            return role
    role = {"name": name, "scopes": list(default_scopes)}
    roles.append(role)
    return role


def configure(c, *, port: int, storage: Path, user: str | None = None, client_url: str | None = None,
              python: str = sys.executable, ip: str = "127.0.0.1") -> dict:
    """Add the exchange to the hub config ``c``; returns the service's entry in ``c.JupyterHub.services``.

    ``client_url`` is the exchange's address as a student's server reaches it (default: the service's
    own, ``http://IP:PORT/services/course-exchange/``, right when servers run on the hub's machine)."""
    url = f"http://{ip}:{int(port)}"
    service = {
        "name": SERVICE_NAME,
        "url": url,
        "command": [python, "-m", "course_exchange.service"],
        "environment": {"COURSE_EXCHANGE_DIR": str(Path(storage).resolve()), "PYTHONUNBUFFERED": "1"},
        "oauth_no_confirm": True,          # a student opening their feedback page is not asked to authorize
        "display": False,                  # no entry in the hub's Services menu: students use course commands
        "timeout": START_TIMEOUT_S,        # the hub gives up (and exits) when a managed service is not up by then
    }
    if os.environ.get("COURSE_EXCHANGE_LIMITS"):     # other caps for this class (see limits.py)
        service["environment"]["COURSE_EXCHANGE_LIMITS"] = os.environ["COURSE_EXCHANGE_LIMITS"]
    if user:
        service["user"] = user
    services = list(c.JupyterHub.services) if "services" in c.JupyterHub else []
    services = [s for s in services if s.get("name") != SERVICE_NAME] + [service]
    c.JupyterHub.services = services

    roles = list(c.JupyterHub.load_roles) if "load_roles" in c.JupyterHub else []
    own = _role(roles, SERVICE_NAME, [])
    own["description"] = "the course exchange: read who a caller is and their groups"
    own["scopes"] = sorted(set(own.get("scopes", [])) | set(SERVICE_SCOPES))
    own["services"] = sorted(set(own.get("services", [])) | {SERVICE_NAME})
    for name, default in (("user", DEFAULT_USER_SCOPES), ("server", DEFAULT_SERVER_SCOPES)):
        role = _role(roles, name, default)
        if ACCESS_SCOPE not in role["scopes"]:
            role["scopes"] = [*role["scopes"], ACCESS_SCOPE]
    c.JupyterHub.load_roles = roles

    client = client_url or f"{url}/services/{SERVICE_NAME}/"
    c.Spawner.environment.update({"COURSE_EXCHANGE_URL": client})
    return service
