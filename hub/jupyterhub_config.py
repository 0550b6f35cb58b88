# The class's JupyterHub, on this machine: `.venv/bin/jupyterhub -f hub/jupyterhub_config.py`.
#
# One file for the local hub. Its sections are owned apart so that edits merge:
#   1. hub, proxy and state      (the exchange's helper wrote it; see docs/exchange.md)
#   2. the hand-in exchange      (course_exchange.hub_config.configure; see docs/exchange.md)
#   3. spawner and authenticator (the hub's; see docs/hub-*.md)
#   4. set-up access             (an admin token for scripts and tests, only when one is given)
#   5. LTI 1.3 launch            (course_exchange.lti_launch.configure, only when COURSE_HUB_LTI is set)
#
# Every value a test or a second hub on the same machine must change comes from the environment:
#   COURSE_HUB_STATE           state folder (database, cookie secret, pid files, exchange storage)
#                              default: build/hub in the course checkout
#   COURSE_HUB_IP              default 127.0.0.1 (the hub's public address, served by the proxy)
#   COURSE_HUB_PORT            default 8000 (public, the proxy's)
#   COURSE_HUB_PROXY_API_PORT  default COURSE_HUB_PORT + 1 (the proxy's REST API, 127.0.0.1 only)
#   COURSE_HUB_API_PORT        default COURSE_HUB_PORT + 2 (the hub's own port, 127.0.0.1 only)
#   COURSE_EXCHANGE_PORT       default COURSE_HUB_PORT + 3 (the exchange service, 127.0.0.1 only)
#   COURSE_EXCHANGE_USER       as root: the Unix user the exchange runs as (default course-exchange; `root`
#                              keeps it root). Not root: unused, it runs as the hub's user
#   COURSE_EXCHANGE_DIR        the exchange's storage, 0700, its user's (default ~USER/storage with a service
#                              user, else STATE/exchange)
#   COURSE_HUB_LTI             the LTI 1.3 settings file (course_exchange.lti_settings; docs/hub-admins.md):
#                              when set, students and instructors log in by a launch from the LMS
#   COURSE_HUB_ADMIN_TOKEN     when set: a service `course-admin` with this token may create users,
#                              groups and tokens through the hub's REST API (tests, set-up scripts)
import os
import shutil
from pathlib import Path

from course_exchange.hub_config import configure, service_home

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

HUB_DIR = Path(__file__).resolve().parent
COURSE_ROOT = HUB_DIR.parent

# ---- 1. hub, proxy and state ------------------------------------------------------------------------
STATE = Path(os.environ.get("COURSE_HUB_STATE") or COURSE_ROOT / "build" / "hub").resolve()
STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
os.chmod(STATE, 0o700)
PORT = int(os.environ.get("COURSE_HUB_PORT") or 8000)
PROXY_API_PORT = int(os.environ.get("COURSE_HUB_PROXY_API_PORT") or PORT + 1)
HUB_API_PORT = int(os.environ.get("COURSE_HUB_API_PORT") or PORT + 2)
EXCHANGE_PORT = int(os.environ.get("COURSE_EXCHANGE_PORT") or PORT + 3)

c.JupyterHub.ip = os.environ.get("COURSE_HUB_IP") or "127.0.0.1"
c.JupyterHub.port = PORT
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = HUB_API_PORT
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True

# configurable-http-proxy from npm: `npm ci --prefix hub` installs the version hub/package-lock.json pins.
_local_chp = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [str(_local_chp) if _local_chp.exists()
                                   else shutil.which("configurable-http-proxy") or "configurable-http-proxy"]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "configurable-http-proxy.pid")
c.ConfigurableHTTPProxy.should_start = True

# ---- 2. the hand-in exchange ------------------------------------------------------------------------
# As root the exchange runs as its own unprivileged Unix user (COURSE_EXCHANGE_USER, default course-exchange,
# which `make hub` creates), storing under that user's home; COURSE_EXCHANGE_USER=root keeps it root (said loudly).
# Not root: it runs as the hub's user, storing under STATE.
EXCHANGE_USER = os.environ.get("COURSE_EXCHANGE_USER") or ("course-exchange" if os.geteuid() == 0 else "")
if EXCHANGE_USER == "root":
    print("!! course-exchange runs as ROOT (COURSE_EXCHANGE_USER=root): a fault in it is a fault as root", flush=True)
    EXCHANGE_USER = ""
EXCHANGE_DIR = os.environ.get("COURSE_EXCHANGE_DIR") or (service_home(EXCHANGE_USER) / "storage" if EXCHANGE_USER
                                                         else STATE / "exchange")
if os.environ.get("COURSE_HUB_LTI") and not os.environ.get("COURSE_LTI_JWKS"):
    # the tool's public keys, served by the exchange for the LMS: beside the key the LTI settings name
    from course_exchange.ags.tool_key import jwks_path
    from course_exchange.lti_settings import SettingsError, load as load_lti

    try:
        _key = load_lti(os.environ["COURSE_HUB_LTI"]).private_key
    except SettingsError as exc:
        raise SystemExit(f"jupyterhub_config: {exc}") from None
    if _key is not None:
        os.environ["COURSE_LTI_JWKS"] = str(jwks_path(_key))
configure(c, port=EXCHANGE_PORT, storage=Path(EXCHANGE_DIR), user=EXCHANGE_USER or None)

# ---- 3. spawner and authenticator (the hub's: hub/spawner_config.py, docs/hub-admins.md) -------------
# As root: students log in with their Unix account (PAM) and each server runs as its student
# (LocalProcessSpawner), homes closed (0700). Otherwise, or with COURSE_HUB_DEMO=1: a DEMO where every
# server runs as one user, with no isolation on disk (said loudly at start). Every server runs
# jupyterhub-singleuser from this environment and opens the nbgitpuller link of the student edition.
# It runs on this same `c`, so it adds to what the sections above set.
import runpy  # noqa: E402

runpy.run_path(str(HUB_DIR / "spawner_config.py"), init_globals={"c": c})

# ---- 4. set-up access -------------------------------------------------------------------------------
if os.environ.get("COURSE_HUB_ADMIN_TOKEN"):
    c.JupyterHub.services = [*c.JupyterHub.services,
                             {"name": "course-admin", "api_token": os.environ["COURSE_HUB_ADMIN_TOKEN"]}]
    c.JupyterHub.load_roles = [*c.JupyterHub.load_roles,
                               {"name": "course-admin", "services": ["course-admin"],
                                "description": "set-up scripts and tests: users, groups, tokens",
                                "scopes": ["admin:users", "admin:groups", "tokens", "admin:servers",
                                           "list:services", "read:services"]}]

# ---- 5. LTI 1.3 launch (course_exchange.lti_launch; docs/hub-admins.md, "LTI 1.3") --------------------
# With COURSE_HUB_LTI naming the settings file, the LMS logs people in: jupyterhub-ltiauthenticator with
# the course's checks; the launch's course role puts the user in course-<id>-students or -instructors.
# In users mode (root, no COURSE_HUB_DEMO) each launched user gets a Unix account on the first launch.
if os.environ.get("COURSE_HUB_LTI"):
    from course_exchange import lti_launch
    from course_exchange.lti_settings import SettingsError

    try:
        lti_launch.configure(c, os.environ["COURSE_HUB_LTI"], state=STATE,
                             unix_users=c.JupyterHub.spawner_class == "localprocess")
    except SettingsError as exc:
        raise SystemExit(f"jupyterhub_config: {exc}") from None
