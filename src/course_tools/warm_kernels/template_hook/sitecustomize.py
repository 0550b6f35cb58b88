"""Loaded at interpreter start-up only from the warm kernel template's PYTHONPATH (see ``server``)."""

import os

if os.environ.get("COURSE_WARM_TEMPLATE"):
    from course_tools.warm_kernels import server

    server.install(os.environ["COURSE_WARM_TEMPLATE"], os.path.dirname(os.path.abspath(__file__)))
