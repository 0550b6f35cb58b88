"""``make hub``: the class's JupyterHub on this machine, from hub/jupyterhub_config.py.

What it does before it starts the hub, each step printed:

1. the proxy: configurable-http-proxy from npm, installed into ``hub/node_modules`` by
   ``npm ci --prefix hub`` (the version hub/package-lock.json pins) when it is missing;
2. the student edition (``course publish``): the nbgitpuller link points at it. A first run
   publishes one into ``build/edition``; later runs use it as it is, since a publish is the
   instructor's own step (``course publish build/edition`` brings your changes to the students);
   ``COURSE_HUB_EDITION`` names another edition, a path or a git URL;
3. the mode (hub/spawner_config.py): as root, real Unix users (PAM logins, each server run as its
   student); otherwise a DEMO with no isolation on disk, with a shared password (one is made up
   and printed when ``COURSE_HUB_DEMO_PASSWORD`` is not set);
4. the students' environment, which their servers run (``COURSE_HUB_ENV`` for hub/spawner_config.py):
   in users mode the one ``course hub-env`` builds from the edition, ``/opt/torch-compile-course/env``
   (``COURSE_HUB_ENV`` names another place), built when it is missing or was built from another commit
   of the edition (about a minute: the packages are hard-linked from this venv); it holds no solution,
   hidden test or instructor-only module. ``COURSE_HUB_ENV`` set to a venv course hub-env did not make
   (TLJH's ``/opt/tljh/user``) is used as it is. In the demo, this venv (no isolation there anyway);
5. in users mode, whether the students can reach what they need: the environment's Python and the
   edition must be readable by other users (it says which folder is closed, and how to open it or
   where to install instead);
6. as root, the exchange's own Unix user (``COURSE_EXCHANGE_USER``, default ``course-exchange``): a
   system user with no login shell, created when it is missing, whose home holds the exchange's
   storage; the hub starts the exchange as that user, never as root;
6. with ``COURSE_HUB_LTI`` (the LTI 1.3 settings file, docs/hub-admins.md): the file is read (a bad one
   stops here, exit 2, naming the key) and the URLs to give the LMS are printed;
7. then it prints the hub's address and the nbgitpuller link for the students, and runs
   ``jupyterhub -f hub/jupyterhub_config.py`` in the foreground (Ctrl-C stops it and every server).

Settings come from the environment (hub/jupyterhub_config.py's header and hub/spawner_config.py's
docstring list them): ``COURSE_HUB_PORT`` (default 8000), ``COURSE_HUB_IP``, ``COURSE_HUB_STATE``...
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
import sys
from pathlib import Path

HUB_DIR = Path(__file__).resolve().parent
CHECKOUT = HUB_DIR.parent
CONFIG = HUB_DIR / "jupyterhub_config.py"
CHP = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
BIN = Path(sys.executable).parent


def step(text: str) -> None:
    print(f"[hub] {text}", flush=True)


def ensure_proxy() -> None:
    if CHP.exists() or shutil.which("configurable-http-proxy"):
        step(f"proxy: {CHP if CHP.exists() else shutil.which('configurable-http-proxy')}")
        return
    if shutil.which("npm") is None:
        raise SystemExit("make hub: the hub's proxy, configurable-http-proxy, comes from npm, and there is no npm "
                         "here. Install Node.js and npm (Debian: apt-get install nodejs npm), then run make hub again.")
    step("proxy: npm ci --prefix hub (configurable-http-proxy, the version hub/package-lock.json pins)")
    subprocess.run(["npm", "ci", "--prefix", str(HUB_DIR), "--no-audit", "--no-fund"], check=True)


def ensure_edition() -> str:
    chosen = os.environ.get("COURSE_HUB_EDITION")
    if chosen:
        step(f"student edition: {chosen} (COURSE_HUB_EDITION)")
        return chosen
    edition = CHECKOUT / "build" / "edition"
    if (edition / ".git").is_dir():
        step(f"student edition: {edition}, as last published (`course publish {edition}` brings your changes)")
    else:
        step(f"student edition: publishing one into {edition} (course publish)")
        subprocess.run([str(BIN / "course"), "publish", str(edition)], check=True, cwd=CHECKOUT)
    os.environ["COURSE_HUB_EDITION"] = str(edition)
    return str(edition)


def ensure_environment(edition: str, demo: bool) -> Path:
    """The students' environment (step 4 of the module's docstring), named in ``COURSE_HUB_ENV``."""
    from course_tools.hub_env.build import DEFAULT_PREFIX, MARK, read_mark   # the hub runs in the instructor's venv

    chosen = os.environ.get("COURSE_HUB_ENV")
    if demo and not chosen:
        step(f"students' environment: {sys.prefix}, the one running the hub (the demo; a class's hub runs "
             "as root from the environment `make hub-env` builds)")
        return Path(sys.prefix)
    prefix = Path(chosen or DEFAULT_PREFIX)
    mark = read_mark(prefix)
    if chosen and not (prefix / MARK).exists() and (prefix / "bin" / "jupyterhub-singleuser").exists():
        step(f"students' environment: {prefix} (COURSE_HUB_ENV; not built by course hub-env, so not scanned)")
        return prefix
    commit = subprocess.run(["git", "-c", f"safe.directory={edition}", "-C", edition, "rev-parse", "--short=12",
                             "HEAD"], capture_output=True, text=True).stdout.strip() if "://" not in edition else ""
    if mark is not None and (not commit or mark.get("commit") == commit):
        step(f"students' environment: {prefix}, built {mark.get('built')} from the edition at {mark.get('commit')} "
             "(course hub-env: no solutions, hidden tests or instructor-only modules)")
    else:
        why = "missing" if mark is None else f"built from {mark.get('commit')}, the edition is now at {commit}"
        step(f"students' environment: building {prefix} ({why}): course hub-env, about a minute")
        done = subprocess.run([str(BIN / "course"), "hub-env", str(prefix), "--edition", edition], cwd=CHECKOUT)
        if done.returncode != 0:
            print(f"[hub] cannot start: the students' environment {prefix} could not be built (above)",
                  file=sys.stderr, flush=True)
            raise SystemExit(2)
    os.environ["COURSE_HUB_ENV"] = str(prefix)
    return prefix


def check_reachable(edition: str, python: Path | None = None) -> None:
    """Users mode: stop (exit 2) when a student's server could not start, naming the closed folder and the fix.

    A student's server runs this environment's Python and clones the edition; when either is closed to other
    users the hub used to start and every login failed (the hub trial: a venv whose interpreter lay under
    root's home, ``PermissionError: '.venv/bin/python'``)."""
    from course_tools.hub_env.reach import closed_to_others

    python = Path(os.path.realpath(python or sys.executable))
    problems = []
    if (closed := closed_to_others(python, stat.S_IXOTH)) is not None:
        problems.append(f"students cannot run the shared environment's Python ({python}): {closed} is closed to "
                        "other users. Build the students' environment where every user can read it, from a Python "
                        "they can run (make hub-env PREFIX=/opt/torch-compile-course/env; see docs/hub-admins.md), "
                        "or open that folder (chmod o+x)")
    if "://" not in edition and (closed := closed_to_others(Path(edition), stat.S_IROTH | stat.S_IXOTH)):
        problems.append(f"students cannot read the student edition: {closed} is closed to other users "
                        "(publish it under a folder everyone can read, e.g. /srv/torch-compile-course-edition)")
    if problems:
        for problem in problems:
            print(f"[hub] cannot start: {problem}", file=sys.stderr, flush=True)
        raise SystemExit(2)


def seal_reminder(root: Path = CHECKOUT) -> str | None:
    """Users mode: when this checkout's instructor folders are still open to other users, the step to run."""
    from course_grader.exercise.seal import still_open   # the hub's environment has the course's packages

    still = still_open(root)
    if not still:
        return None
    return (f"WARNING: {len(still)} of this checkout's instructor paths (solutions/, tests/, build/, its git store) "
            f"are readable by every user, students included (first: {still[0]}). Run `course seal` "
            "(docs/hub-instructors.md) before students log in.")


def ensure_service_user() -> None:
    """As root: the Unix user the exchange runs as, made when missing (a system user, no login)."""
    import pwd

    name = os.environ.get("COURSE_EXCHANGE_USER") or "course-exchange"
    if name == "root":
        step("exchange: runs as ROOT (COURSE_EXCHANGE_USER=root)")
        return
    try:
        entry = pwd.getpwnam(name)
        step(f"exchange: runs as the Unix user {name} (uid {entry.pw_uid}), storage under {entry.pw_dir}")
        return
    except KeyError:
        pass
    home = f"/var/lib/{name}"
    step(f"exchange: creating its Unix user {name} (useradd --system, home {home}, no login shell)")
    subprocess.run(["useradd", "--system", "--create-home", "--home-dir", home, "--shell", "/usr/sbin/nologin",
                    name], check=True)
    os.environ["COURSE_EXCHANGE_USER"] = name


def lti_urls(settings_file: str, hub_url: str) -> list[str]:
    """What to tell the LMS about this hub, after the settings file is read; exit 2 when it cannot be."""
    from course_exchange.lti_settings import SettingsError, load

    try:
        settings = load(settings_file)
    except SettingsError as exc:
        print(f"[hub] cannot start: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    hub = hub_url.rstrip("/")
    courses = ", ".join(f"{context} -> {course}" for context, course in settings.courses.items()) or "none yet"
    return [f"LTI 1.3: launches from {settings.issuer} (client id {settings.client_id}); courses: {courses}",
            f"LTI 1.3: give the LMS the login initiation URL {hub}/hub/lti13/oauth_login, the redirect URI "
            f"{hub}/hub/lti13/oauth_callback and the target link URI {hub}/hub/"]


def main() -> int:
    ensure_proxy()
    edition = ensure_edition()
    demo = os.environ.get("COURSE_HUB_DEMO") == "1" or os.geteuid() != 0
    if demo:
        if not os.environ.get("COURSE_HUB_DEMO_PASSWORD"):
            os.environ["COURSE_HUB_DEMO_PASSWORD"] = secrets.token_urlsafe(9)
        login = ("logins come by LTI launches from the LMS" if os.environ.get("COURSE_HUB_LTI") else
                 f"log in with any name and the password {os.environ['COURSE_HUB_DEMO_PASSWORD']}")
        step(f"mode: DEMO (every server runs as you, with NO isolation on disk between students); {login}")
    else:
        step("mode: users (as root: students log in with their Unix account; each server runs as its student)")
    environment = ensure_environment(edition, demo)
    if not demo:
        check_reachable(edition, environment / "bin" / "python")
        if reminder := seal_reminder():
            step(reminder)
    if os.geteuid() == 0:
        ensure_service_user()
    ip = os.environ.get("COURSE_HUB_IP") or "127.0.0.1"
    port = os.environ.get("COURSE_HUB_PORT") or "8000"
    sys.path.insert(0, str(HUB_DIR))
    from course_link import student_link

    link = student_link(f"http://{ip}:{port}/", edition, os.environ.get("COURSE_HUB_BRANCH") or "main")
    if os.environ.get("COURSE_HUB_LTI"):
        for line in lti_urls(os.environ["COURSE_HUB_LTI"], f"http://{ip}:{port}/"):
            step(line)
    step(f"the hub: http://{ip}:{port}/  (logging in opens lesson 01)")
    step(f"the link for your students (it also brings course updates): {link}")
    step(f"starting: {BIN / 'jupyterhub'} -f {CONFIG}  (Ctrl-C stops the hub and every student's server)")
    os.execv(str(BIN / "jupyterhub"), [str(BIN / "jupyterhub"), "-f", str(CONFIG)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
