"""A hub and the test LMS wired together, and a launch as an HTTP client makes it (for tests).

    with lms_hub.platform_and_hub(tmp_path, demo=True) as (platform, hub):
        session = requests.Session()
        form = lms_hub.launch_form(session, platform.start_url("lti-alice", ["Learner"], CONTEXT, TITLE, "rl-1"))
        answer = lms_hub.post_form(session, form)          # the browser's auto-submit, without following

The hub runs from hub/jupyterhub_config.py with ``COURSE_HUB_LTI`` naming a settings file written for
the platform (``CLIENT_ID``, ``DEPLOYMENT_ID``, ``CONTEXT`` -> ``COURSE``); the platform knows the hub's
login, redirect and target link URLs. The tool's JWKS URL registered is ``tool_jwks_url`` (default: a
path of the hub no test here calls; the AGS tests give theirs).
"""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Iterator
from pathlib import Path

import hubtools
import requests

from lti.platform import Platform

CLIENT_ID = "course-hub-client"
DEPLOYMENT_ID = "deployment-1"
CONTEXT = "lms-course-4711"
TITLE = "torch.compile contracts (spring)"
COURSE = "lti1"
FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')
FORM_FIELD = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def settings_toml(platform: Platform, *, courses: dict[str, str] | None = None, extra: str = "") -> str:
    mapping = "\n".join(f'"{k}" = "{v}"' for k, v in (courses or {CONTEXT: COURSE}).items())
    return (f'[platform]\nissuer = "{platform.issuer}"\nclient_id = "{CLIENT_ID}"\n'
            f'deployment_ids = ["{DEPLOYMENT_ID}"]\nauth_url = "{platform.auth_url}"\n'
            f'token_url = "{platform.token_url}"\njwks_url = "{platform.jwks_url}"\n{extra}\n'
            f"[courses]\n{mapping}\n")


@contextlib.contextmanager
def platform_and_hub(folder: Path, *, demo: bool = True, env: dict[str, str] | None = None,
                     tool_jwks_url: str | None = None, settings_extra: str = "") -> Iterator[tuple[Platform, object]]:
    port = hubtools.free_ports(4)
    hub_url = f"http://127.0.0.1:{port}"
    with Platform() as platform:
        platform.register_tool(client_id=CLIENT_ID, deployment_id=DEPLOYMENT_ID,
                               login_url=f"{hub_url}/hub/lti13/oauth_login",
                               redirect_uris=[f"{hub_url}/hub/lti13/oauth_callback"],
                               jwks_url=tool_jwks_url or f"{hub_url}/hub/no-tool-jwks-here",
                               target_link_uri=f"{hub_url}/hub/")
        settings = Path(folder) / "lti.toml"
        settings.write_text(settings_toml(platform, extra=settings_extra))
        with hubtools.running_hub(Path(folder) / "state", port=port, demo=demo,
                                  env={"COURSE_HUB_LTI": str(settings), **(env or {})}) as hub:
            yield platform, hub


def launch_form(session: requests.Session, start_url: str) -> dict:
    """Follow a launch from the LMS's link to the platform's auto-submitting form: ``{"action", "fields"}``."""
    page = session.get(start_url, timeout=60)
    action = FORM_ACTION.search(page.text)
    if page.status_code != 200 or not action:
        raise AssertionError(f"no launch form from {start_url}: {page.status_code} {page.text[:500]}")
    fields = {name: html.unescape(value) for name, value in FORM_FIELD.findall(page.text)}
    return {"action": html.unescape(action.group(1)), "fields": fields}


def post_form(session: requests.Session, form: dict) -> requests.Response:
    """What the form's script does in a browser (one POST; redirects not followed)."""
    return session.post(form["action"], data=form["fields"], allow_redirects=False, timeout=60)


def page_text(response: requests.Response) -> str:
    """The page's words, markup and scripts left out."""
    text = re.sub(r"<script.*?</script>", " ", response.text, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))).strip()


def hub_users(hub) -> dict[str, dict]:
    return {u["name"]: u for u in hub.api("GET", "users")}
