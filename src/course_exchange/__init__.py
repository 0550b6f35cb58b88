"""The class's hand-in exchange: a JupyterHub service (``course-exchange``) and its client commands.

A student hands in from Lab (``course submit FILE`` in Lab's terminal, with the hub's token); an
instructor sets deadlines, collects the hand-ins that count and returns each student's feedback; a
student fetches their own feedback back into their workspace. Identity and course membership come from
the hub only (tokens or the hub's OAuth cookie; courses are hub groups, see :mod:`.courses`).

This package reaches the grader only through :mod:`course_grader.api` (a test reads the imports).

* :mod:`.courses`    — course ids and the hub group names that make a course
* :mod:`.limits`     — every cap and rate, named once
* :mod:`.errors`     — the refusals, each with its HTTP status and words
* :mod:`.store`      — storage on disk (sqlite in WAL mode + one file per hand-in, never overwritten)
* :mod:`.service`    — the tornado application the hub runs as a managed service
* :mod:`.hub_config` — ``configure(c, ...)``: the service, its role and the users' access in a hub config
* :mod:`.client`     — the HTTP client the ``course`` commands use
* :mod:`.cli`        — ``course submit`` (hub route), ``collect``, ``return``, ``feedback``
"""
