"""Lab's Exercises panel: a prebuilt JupyterLab extension and the Jupyter server extension it talks to.

The panel (TypeScript, ``lab/extension/``, built into ``labextension/`` here and installed as a prebuilt
extension under ``share/jupyter/labextensions/compile-course-exercises/``) lists the course's exercises and
where each stands, and has Check, Hand in and Open feedback buttons. This server extension (enabled by
``etc/jupyter/jupyter_server_config.d/compile-course.json``, which the package installs) answers it; it adds
routes only, and imports nothing heavy until a request comes.

  protocol   the routes, states and messages both sides use
  handlers   the routes (the server's own APIHandler: token, login cookie and XSRF apply)
  listing    where each exercise stands: the workspace copy, the last check, hand-ins, feedback
  jobs       the buttons run the ``course`` command itself, in a child process
"""

from __future__ import annotations

LABEXTENSION = "compile-course-exercises"


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "course_tools.lab_panel"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from .handlers import routes
    from .jobs import Jobs

    web_app = serverapp.web_app
    web_app.settings["course_panel_jobs"] = Jobs()
    web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))
    serverapp.log.info("course_tools.lab_panel: the Exercises panel's routes are under %scourse-panel/",
                       web_app.settings["base_url"])
