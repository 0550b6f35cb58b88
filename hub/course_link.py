"""The nbgitpuller link of the course: one place for the hub's config, ``make hub`` and the tests.

nbgitpuller's link is ``/hub/user-redirect/git-pull?repo=...&branch=...&targetpath=...&urlpath=...``
(its ``git-pull`` handler, below the student's own server): the first visit clones ``repo`` into
``~/TARGETPATH``; every later one merges the repository's new commits into that clone, keeping the
student's changes; then it opens ``urlpath``. The hub's config also makes it every server's default
URL, so logging in alone brings the course and its updates.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

TARGET = "torch-compile-course"                       # the student's clone, in their home
FIRST_LESSON = "notebooks/01_lesson_goals.ipynb"


def nbgitpuller_path(edition: str, branch: str = "main") -> str:
    """The link's path and query below a user's server (``/user/NAME``)."""
    query = urlencode({"repo": edition, "branch": branch, "targetpath": TARGET,
                       "urlpath": f"lab/tree/{TARGET}/{FIRST_LESSON}"}, quote_via=quote, safe="/")
    return f"/git-pull?{query}"


def student_link(hub_url: str, edition: str, branch: str = "main") -> str:
    """The link an instructor hands out: it works for whoever opens it, after they log in."""
    return f"{hub_url.rstrip('/')}/hub/user-redirect{nbgitpuller_path(edition, branch)}"
