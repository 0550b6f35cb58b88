"""``configure(c, ...)``: the exchange in a JupyterHub configuration (``jupyterhub_config.py``).

It adds, to the config object ``c``:

* the managed service ``course-exchange`` (the hub starts and stops it; ``python -m course_exchange.service``),
  listening on 127.0.0.1 at ``port``, storing under ``storage``, optionally as another Unix ``user``
  (the hub must then run as root, as TLJH's does): JupyterHub's managed-service ``user`` option, which
  starts the service with that user's uid, gid and groups. The storage folder is then made here, as
  root, owned by that user and 0700, and every folder above it must let that user pass (a clear error
  names the one that does not);
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
import pwd
import stat
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


def service_home(user: str) -> Path:
    """The home folder of the service's Unix user (its storage goes there by default)."""
    try:
        return Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        raise SystemExit(f"course-exchange: there is no Unix user {user!r} to run the exchange as. Create it "
                         f"(useradd --system --create-home --home-dir /var/lib/{user} --shell /usr/sbin/nologin "
                         f"{user}; make hub does this) or name another in COURSE_EXCHANGE_USER") from None


def prepare_storage(storage: Path, user: str) -> None:
    """As root: ``storage`` made (0700) and given to ``user``; every folder above must let ``user`` pass."""
    entry = pwd.getpwnam(user)
    storage = Path(storage).resolve()
    storage.mkdir(parents=True, exist_ok=True, mode=0o700)
    if storage.stat().st_uid != entry.pw_uid:
        for path in [storage, *storage.rglob("*")]:       # a storage handed over from another user
            os.lchown(path, entry.pw_uid, entry.pw_gid)
    os.chmod(storage, 0o700)
    for folder in storage.parents:
        st = folder.stat()
        if st.st_uid == entry.pw_uid:
            passable = st.st_mode & stat.S_IXUSR
        elif st.st_gid in os.getgrouplist(user, entry.pw_gid):
            passable = st.st_mode & stat.S_IXGRP
        else:
            passable = st.st_mode & stat.S_IXOTH
        if not passable and not _acl_lets_pass(folder):
            raise SystemExit(f"course-exchange: its user {user} cannot reach its storage {storage}: {folder} is closed "
                             f"to it. Put the storage elsewhere (COURSE_EXCHANGE_DIR, default ~{user}/storage) or "
                             f"open that folder (chmod o+x {folder})")


def _acl_lets_pass(folder: Path) -> bool:
    """Whether ``folder`` has a POSIX ACL (which may let the user pass: the kernel decides; assumed yes)."""
    try:
        return bool(os.getxattr(folder, "system.posix_acl_access"))
    except OSError:
        return False


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
    for name in ("COURSE_EXCHANGE_LIMITS", "COURSE_LTI_JWKS"):   # other caps (limits.py); the LTI tool's JWKS
        if os.environ.get(name):
            service["environment"][name] = os.environ[name]
    if user:
        service["user"] = user
        service["cwd"] = str(Path(storage).resolve())     # not the hub's folder, which the user may not enter
        if os.geteuid() == 0:
            prepare_storage(Path(storage), user)
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
