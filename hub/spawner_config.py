"""The class hub's spawner and authenticator: who logs in, as which Unix user, and what opens first.

``hub/jupyterhub_config.py`` runs this file in its "spawner and authenticator" section, on the
same config object ``c`` (``runpy.run_path(..., init_globals={"c": c})``), so it adds to what the
exchange's section set (``Spawner.environment``) instead of replacing it. It is plain JupyterHub
configuration; docs/hub-admins.md says what The Littlest JupyterHub and Zero to JupyterHub need.

Two modes:

* **users** (the hub runs as root, as on The Littlest JupyterHub): students log in with their
  own Unix account and password (``PAMAuthenticator``), and each student's server runs as that
  Unix user (``LocalProcessSpawner``). Before a server starts, its user's home is made ``0700``,
  so one student's Lab terminal cannot read another's files. Who may log in: members of the Unix
  groups ``course-<id>-students`` / ``course-<id>-instructors`` (mirrored into the hub groups of
  the same names when the hub starts), and any user an admin added to the hub.
* **demo** (``COURSE_HUB_DEMO=1``, and always when the hub is not root): every server runs as the
  one user who started the hub (``SimpleLocalProcessSpawner``), in ``<state>/homes/NAME``, and
  anyone with the shared password (``COURSE_HUB_DEMO_PASSWORD``, 8 characters or more) logs in
  under any name (``SharedPasswordAuthenticator``; without a password, ``DummyAuthenticator``
  takes any password). There is **no isolation on disk**: every student can read and change
  every other student's files. The hub says so loudly when it starts. Never for a class.

In both modes the course's environment is installed once and shared: every server runs
``jupyterhub-singleuser`` from ``COURSE_HUB_ENV`` (``make hub`` sets it: in users mode to the
students' environment that ``course hub-env`` builds from the edition, ``/opt/torch-compile-course/env``
by default; in the demo, and for a hub started without it, the environment that runs the hub), with
its ``bin/`` first on ``PATH``, so a Lab terminal finds ``course``, and ``COURSE_ROOT`` naming the
student's copy of the course (the packages of that environment are installed, not a checkout). nbgitpuller
(a server extension installed in that environment) brings the course: the server's default URL
is the nbgitpuller link, which clones the student edition into ``~/torch-compile-course`` on a
first visit, merges the course's new commits on later ones (keeping the student's edits), and
opens lesson 01.

Settings, from the environment:

``COURSE_HUB_EDITION``   the student edition, a git repository (``course publish DEST``), as a path
                         or URL every student can read; default ``<checkout>/build/edition``
``COURSE_HUB_BRANCH``    its branch (default ``main``)
``COURSE_HUB_COURSES``   course ids, comma-separated (default ``tcc``), for the Unix groups above
``COURSE_HUB_DEMO``      ``1``: demo mode even as root; ``COURSE_HUB_DEMO_PASSWORD`` its password
``COURSE_HUB_ENV``       the shared environment's folder (default: the one running the hub; ``make hub``
                         sets it, see above)
``COURSE_HUB_SHARED``    a folder every student can read, for what the hub gives their servers
                         (default ``<checkout>/build/hub-shared``): a git config naming the edition
                         a safe directory (git refuses a local repository owned by someone else)
``COURSE_HUB_SERVER_PORTS``  ``LOW-HIGH``: the students' servers listen on free ports of this range
                         (default: any free port), for a machine whose ports are shared out
"""

from __future__ import annotations

import grp
import os
import pwd
import socket
import stat
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course_link import TARGET, nbgitpuller_path  # noqa: E402  (hub/course_link.py, beside this file)

c = globals()["c"] if "c" in globals() else get_config()  # noqa: F821  (the hub's config object; see above)

CHECKOUT = Path(__file__).resolve().parents[1]
ENVIRONMENT = Path(os.environ.get("COURSE_HUB_ENV") or sys.prefix)
EDITION = os.environ.get("COURSE_HUB_EDITION") or str(CHECKOUT / "build" / "edition")
BRANCH = os.environ.get("COURSE_HUB_BRANCH") or "main"
COURSES = [x.strip() for x in (os.environ.get("COURSE_HUB_COURSES") or "tcc").split(",") if x.strip()]
STATE = Path(os.environ.get("COURSE_HUB_STATE") or CHECKOUT / "build" / "hub")
SHARED = Path(os.environ.get("COURSE_HUB_SHARED") or CHECKOUT / "build" / "hub-shared")
SERVER_PORTS = os.environ.get("COURSE_HUB_SERVER_PORTS", "")
DEMO = os.environ.get("COURSE_HUB_DEMO") == "1" or os.geteuid() != 0


def students_gitconfig(edition: str = EDITION, shared: Path = SHARED) -> Path | None:
    """A git config for the students' servers that trusts the edition, when it is a local folder.

    git (since 2.35.2) refuses to read a repository another user owns ("dubious ownership"),
    and a local clone drops ``-c`` and ``GIT_CONFIG_*`` settings given in the environment; only a
    system or global config file may name a safe directory. This file includes the machine's own
    ``/etc/gitconfig`` and adds the edition; servers get it as ``GIT_CONFIG_SYSTEM``. An edition
    on a git host (``https://...``) needs none of this."""
    if "://" in edition or not Path(edition).is_absolute():
        return None
    shared.mkdir(parents=True, exist_ok=True)
    os.chmod(shared, 0o755)
    lines = ["# written by hub/spawner_config.py: the course's edition is safe for the students' git"]
    if Path("/etc/gitconfig").is_file():
        lines += ["[include]", "\tpath = /etc/gitconfig"]
    lines += ["[safe]", f"\tdirectory = {edition}", f"\tdirectory = {edition.rstrip('/')}/.git"]
    path = shared / "students.gitconfig"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.chmod(path, 0o644)
    return path


def home_of(spawner) -> Path:
    if DEMO:
        return Path(spawner.home_dir)
    return Path(pwd.getpwnam(spawner.user.name).pw_dir)


def free_server_port(spawner) -> None:
    """Pick a free port of COURSE_HUB_SERVER_PORTS for the server about to start."""
    if not SERVER_PORTS:
        return
    low, high = (int(x) for x in SERVER_PORTS.split("-"))
    for port in range(low, high + 1):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        spawner.port = port
        return
    raise RuntimeError(f"no free port in COURSE_HUB_SERVER_PORTS={SERVER_PORTS}")


def before_spawn(spawner) -> None:
    """Users mode: the student's home is made 0700 (isolation on disk). Both: pick the port."""
    if not DEMO:
        home = home_of(spawner)
        if home.is_dir() and stat.S_IMODE(home.stat().st_mode) & 0o077:
            os.chmod(home, 0o700)
            spawner.log.info("closed %s to other users (0700)", home)
    free_server_port(spawner)


# -- the shared environment, and what opens first ---------------------------------------------
c.Spawner.cmd = [str(ENVIRONMENT / "bin" / "jupyterhub-singleuser")]
c.Spawner.environment.update({
    "PATH": f"{ENVIRONMENT / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    # `course check/submit` in a Lab terminal: the student's copy of the course is their workspace, and the
    # course folder of the environment's installed packages (an editable checkout keeps its own)
    "COURSE_WORKSPACE": lambda spawner: str(home_of(spawner) / TARGET),
    "COURSE_ROOT": lambda spawner: str(home_of(spawner) / TARGET),
})
if (_gitconfig := students_gitconfig()) is not None:
    c.Spawner.environment.update({"GIT_CONFIG_SYSTEM": str(_gitconfig)})
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = nbgitpuller_path(EDITION, BRANCH)            # /user/NAME/ pulls the course, then opens lesson 01
# the course's Lab settings (no news pop-up): course hub-env puts them where Lab looks, in its environment
LAB_SETTINGS = ENVIRONMENT / "share" / "jupyter" / "lab" / "settings"
if not (LAB_SETTINGS / "overrides.json").is_file():
    LAB_SETTINGS = CHECKOUT / "lab" / "settings"
c.Spawner.args = [
    f"--LabApp.app_settings_dir={LAB_SETTINGS}",
    # a Lab terminal is bash, not a login shell: a login shell reads /etc/profile, whose PATH drops
    # the shared environment (and with it `course`)
    "--ServerApp.terminado_settings=shell_command=/bin/bash",
]
c.Spawner.start_timeout = 180                         # a busy machine: the server imports jupyterlab
c.Spawner.http_timeout = 180
c.Spawner.pre_spawn_hook = before_spawn

# -- who logs in, as whom -------------------------------------------------------------------------
GROUPS = [f"course-{course}-{role}" for course in COURSES for role in ("students", "instructors")]

if not DEMO:
    c.JupyterHub.authenticator_class = "pam"
    c.JupyterHub.spawner_class = "localprocess"
    unix_groups = {}
    for name in GROUPS:
        try:
            unix_groups[name] = sorted(grp.getgrnam(name).gr_mem)
        except KeyError:
            continue
    c.PAMAuthenticator.allowed_groups = set(unix_groups)
    c.Authenticator.allow_existing_users = True       # and whoever an admin added to the hub
    c.JupyterHub.load_groups = {name: {"users": users} for name, users in unix_groups.items()}
else:
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "homes" / "{username}")
    password = os.environ.get("COURSE_HUB_DEMO_PASSWORD")
    if password:   # JupyterHub's own shared-password login (at least 8 characters)
        c.JupyterHub.authenticator_class = "shared-password"
        c.SharedPasswordAuthenticator.user_password = password
    else:          # any name, any password: API-level tests, never a class
        c.JupyterHub.authenticator_class = "dummy"
    c.Authenticator.allow_all = True
    if os.geteuid() == 0:
        c.Spawner.args.append("--allow-root")
    bar = "!" * 78
    print(f"{bar}\n!! DEMO HUB: every student's server runs as one Unix user ({pwd.getpwuid(os.geteuid()).pw_name}),"
          "\n!! with NO ISOLATION ON DISK: any student can read and change any other student's files.\n"
          f"!! {'Anyone can log in with the shared password.' if password else 'ANY password logs in: set COURSE_HUB_DEMO_PASSWORD.'}\n"
          "!! For a class, run the hub as root with real Unix users (docs/hub-admins.md).\n"
          f"{bar}", file=sys.stderr, flush=True)
