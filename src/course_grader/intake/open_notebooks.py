"""Where a student's notebook is open in a running Jupyter server, so that ``course submit`` can say so.

``course submit`` hands in what is saved on disk. A change still in the browser (typed, not yet
saved) is not on disk, and nothing outside the browser can see it: without real-time
collaboration, the document model lives in the browser only. Its "unsaved" flag is JupyterLab's
``DocumentRegistry.IModel.dirty``, a property of the model in the page; jupyter_server's REST API
(``/api/contents``, ``/api/sessions``) has no dirty state and no unsaved content. Only
jupyter-collaboration (``jupyter_server_ydoc``, not among the course's pins) keeps a live model
in the server, as a Y document reached over its websocket rooms, and it saves every change to disk
itself. So ``course submit`` cannot compare with a live model, and says plainly that it cannot see
unsaved changes. What a Jupyter server does know is
which notebooks have a session (open, with a kernel). This module asks every server of this user
that is running on this machine (``jupyter_server.serverapp.list_running_servers``, the runtime
folder's ``jpserver-*.json`` files) for its sessions, and returns those that hold the file. Every
failure (no server, a stale file, a server that does not answer within a second) means: not found.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

ANSWER_TIMEOUT_S = 1.0


def _sessions(server: dict) -> list[dict]:
    url = server.get("url", "").rstrip("/") + "/api/sessions"
    request = urllib.request.Request(url, headers={"Authorization": f"token {server.get('token', '')}"})
    with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as reply:   # noqa: S310 - a local server's URL
        return json.loads(reply.read())


def open_in(path: Path) -> list[str]:
    """The URLs of running Jupyter servers of this user that have ``path`` open in a session."""
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return []
    target = os.path.realpath(path)
    found = []
    try:
        servers = list(list_running_servers())
    except Exception:  # noqa: BLE001 - an unreadable runtime folder means: no server known
        return []
    for server in servers:
        root = server.get("root_dir") or server.get("notebook_dir") or ""
        try:
            sessions = _sessions(server)
        except Exception:  # noqa: BLE001 - a stale file or a server that does not answer
            continue
        for session in sessions if isinstance(sessions, list) else []:
            rel = str(session.get("path") or (session.get("notebook") or {}).get("path") or "")
            if rel and os.path.realpath(os.path.join(root, rel)) == target:
                found.append(server.get("url", ""))
                break
    return found
