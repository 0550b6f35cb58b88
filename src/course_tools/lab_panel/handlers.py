"""The Exercises panel's server side: the Jupyter server's own ``APIHandler``, so the user's token or login
cookie and the server's XSRF check apply to every request (a POST from another site is refused).

The routes and what they answer are in :mod:`.protocol`; what they do is the ``course`` command's own code:
the listing reads (:mod:`.listing`), the buttons run ``course check`` / ``course submit`` / ``course feedback``
(:mod:`.jobs`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from jupyter_server.base.handlers import APIHandler
from tornado import web

from .jobs import Jobs, Running
from .protocol import EXERCISE_NAME, NAMESPACE, Mode


class PanelHandler(APIHandler):
    @property
    def jobs(self) -> Jobs:
        return self.settings["course_panel_jobs"]

    @property
    def workspace(self) -> Path:
        from compile_course.workspace import workspace_dir

        return workspace_dir()[0]

    @property
    def lab_root(self) -> Path:
        return Path(self.contents_manager.root_dir)

    def body(self) -> dict:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(data, dict):
            raise web.HTTPError(400, "the body is not a JSON object")
        return data

    def started(self, job: Running) -> None:
        self.set_status(202)
        self.finish(json.dumps(job.view()))


class ExercisesHandler(PanelHandler):
    @web.authenticated
    async def get(self):
        from .listing import listing

        student = self.get_query_argument("student", "")
        self.finish(json.dumps(await asyncio.to_thread(listing, self.workspace, self.lab_root, student)))


class ActionHandler(PanelHandler):
    @web.authenticated
    async def post(self, name: str, action: str):
        from course_exchange.client import in_hub_session

        copy = self.workspace / "exercises" / f"{name}.ipynb"
        if not copy.is_file():
            raise web.HTTPError(404, f"no copy of {name} in your workspace ({copy})")
        if running := self.jobs.busy(name):
            raise web.HTTPError(409, f"{name}: `{running.view()['command']}` is still running")
        # run in the workspace, on the path the student guide writes: the output reads as a terminal's would
        argv = ["check" if action == "check" else "submit", f"exercises/{name}.ipynb"]
        if action == "handin" and not in_hub_session():
            student = str(self.body().get("student") or "")
            if not student:
                raise web.HTTPError(400, "no hub here: give your student id (the one your instructor gave you), "
                                         "as `course submit FILE --student ID` needs it")
            argv += ["--student", student]
        self.started(self.jobs.start(Running(action, name, argv, self.workspace)))


class FeedbackHandler(PanelHandler):
    @web.authenticated
    async def post(self):
        from course_exchange.cli import feedback_folder
        from course_exchange.client import Exchange, ExchangeError, in_hub_session

        from .listing import lab_path

        if not in_hub_session():
            raise web.HTTPError(409, f"feedback comes back through the class's hub; this server has none "
                                     f"({Mode.LOCAL}): your instructor gives it the way your course says")
        wanted = str(self.body().get("exercise") or "")
        try:
            course = await asyncio.to_thread(lambda: Exchange.from_env().course(None))
        except ExchangeError as exc:
            raise web.HTTPError(502, f"the class's exchange could not be asked: {exc}") from None
        if running := self.jobs.busy("feedback"):
            raise web.HTTPError(409, f"`{running.view()['command']}` is still running")

        def page(job: Running) -> None:
            folder = feedback_folder(course)
            mine = sorted(folder.glob(f"{wanted}*.html")) if wanted else []
            shown = mine[0] if mine else folder / "index.html"
            job.open = lab_path(shown, self.lab_root)
            if job.open is None:
                raise RuntimeError(f"{shown} is outside the folder Lab shows: open it from a terminal")

        self.started(self.jobs.start(Running("feedback", "feedback", ["feedback", course], self.workspace), page))


class JobHandler(PanelHandler):
    @web.authenticated
    def get(self, job_id: str):
        job = self.jobs.jobs.get(job_id)
        if job is None:
            raise web.HTTPError(404, f"no job {job_id} (the server was restarted, or it is long finished)")
        self.finish(json.dumps(job.view()))


def routes(base_url: str) -> list[tuple[str, type, dict]]:
    from jupyter_server.utils import url_path_join

    def at(path: str) -> str:
        return url_path_join(base_url, NAMESPACE, path)

    return [(at("exercises"), ExercisesHandler, {}),
            (at(f"exercises/({EXERCISE_NAME})/(check|handin)"), ActionHandler, {}),
            (at("feedback"), FeedbackHandler, {}),
            (at("jobs/([0-9a-f]+)"), JobHandler, {})]
