"""hub/spawner_config.py read as JupyterHub reads it: which spawner and authenticator, for which mode.

Cheap checks without a hub; test_class_on_hub.py runs the same file in a real hub."""

from __future__ import annotations

import os
import runpy
import socket
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[2]
SPAWNER_CONFIG = ROOT / "hub" / "spawner_config.py"


def load(monkeypatch, tmp_path, **env) -> tuple[Config, dict]:
    for key in [k for k in os.environ if k.startswith("COURSE_HUB_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("COURSE_HUB_SHARED", str(tmp_path / "shared"))
    monkeypatch.setenv("COURSE_HUB_STATE", str(tmp_path / "state"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    c = Config()
    c.Spawner.environment.update({"COURSE_EXCHANGE_URL": "http://127.0.0.1:1/services/course-exchange/"})
    namespace = runpy.run_path(str(SPAWNER_CONFIG), init_globals={"c": c}, run_name="spawner_config")
    return c, namespace


def environment(c: Config) -> dict:
    """The merged Spawner.environment (a lazy update on a fresh Config)."""
    value = c.Spawner.environment
    return value.get_value({}) if hasattr(value, "get_value") else dict(value)


@pytest.mark.skipif(os.geteuid() != 0, reason="users mode is what a hub run as root gets")
def test_as_root_real_users_with_pam_and_their_own_servers(monkeypatch, tmp_path):
    c, ns = load(monkeypatch, tmp_path, COURSE_HUB_EDITION="/srv/edition")
    assert c.JupyterHub.authenticator_class == "pam" and c.JupyterHub.spawner_class == "localprocess"
    assert c.Authenticator.allow_existing_users is True
    assert "--allow-root" not in c.Spawner.args
    env = environment(c)
    assert env["COURSE_EXCHANGE_URL"].endswith("/course-exchange/"), "the exchange's variable is kept"
    assert env["PATH"].split(":")[0] == str(Path(sys.prefix) / "bin")
    assert c.Spawner.cmd == [str(Path(sys.prefix) / "bin" / "jupyterhub-singleuser")]
    gitconfig = Path(env["GIT_CONFIG_SYSTEM"]).read_text()
    assert "directory = /srv/edition\n" in gitconfig and "directory = /srv/edition/.git\n" in gitconfig
    spawner = SimpleNamespace(user=SimpleNamespace(name="root"), home_dir="/nowhere")
    assert env["COURSE_WORKSPACE"](spawner) == str(Path(os.path.expanduser("~root")) / "torch-compile-course")


def test_demo_mode_says_loudly_that_nothing_is_isolated(monkeypatch, tmp_path, capfd):
    c, _ = load(monkeypatch, tmp_path, COURSE_HUB_DEMO="1", COURSE_HUB_DEMO_PASSWORD="a-shared-pw")
    assert c.JupyterHub.spawner_class == "simple" and c.JupyterHub.authenticator_class == "shared-password"
    assert c.SharedPasswordAuthenticator.user_password == "a-shared-pw"
    assert c.SimpleLocalProcessSpawner.home_dir_template == str(tmp_path / "state" / "homes" / "{username}")
    banner = capfd.readouterr().err
    assert "DEMO HUB" in banner and "NO ISOLATION ON DISK" in banner
    env = environment(c)
    spawner = SimpleNamespace(user=SimpleNamespace(name="ada"), home_dir=str(tmp_path / "state" / "homes" / "ada"))
    assert env["COURSE_WORKSPACE"](spawner) == str(tmp_path / "state" / "homes" / "ada" / "torch-compile-course")


def test_demo_without_a_password_says_any_password_logs_in(monkeypatch, tmp_path, capfd):
    c, _ = load(monkeypatch, tmp_path, COURSE_HUB_DEMO="1")
    assert c.JupyterHub.authenticator_class == "dummy"
    assert "ANY password logs in" in capfd.readouterr().err


def test_the_default_url_is_the_nbgitpuller_link_to_lesson_one(monkeypatch, tmp_path):
    c, _ = load(monkeypatch, tmp_path, COURSE_HUB_DEMO="1", COURSE_HUB_EDITION="/srv/my edition",
                COURSE_HUB_BRANCH="term2")
    url = urlsplit(c.Spawner.default_url)
    assert url.path == "/git-pull"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query == {"repo": "/srv/my edition", "branch": "term2", "targetpath": "torch-compile-course",
                     "urlpath": "lab/tree/torch-compile-course/notebooks/01_lesson_goals.ipynb"}
    assert (ROOT / query["urlpath"].removeprefix("lab/tree/torch-compile-course/")).is_file()


def test_an_edition_on_a_git_host_needs_no_git_config(monkeypatch, tmp_path):
    c, _ = load(monkeypatch, tmp_path, COURSE_HUB_DEMO="1", COURSE_HUB_EDITION="https://example.org/course.git")
    assert "GIT_CONFIG_SYSTEM" not in environment(c)


def test_servers_get_a_free_port_of_the_given_range(monkeypatch, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]
        _, ns = load(monkeypatch, tmp_path, COURSE_HUB_DEMO="1", COURSE_HUB_SERVER_PORTS=f"{taken}-{taken + 5}")
        spawner = SimpleNamespace(port=0, log=None)
        ns["free_server_port"](spawner)
        assert taken < spawner.port <= taken + 5
