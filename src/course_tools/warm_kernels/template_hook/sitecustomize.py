"""Loaded at interpreter start-up only from the warm kernel template's PYTHONPATH (see ``server``).

Being first on the path, this file hides the interpreter's own ``sitecustomize`` (Debian's Python ships
one, /etc/python3.11/sitecustomize.py): it runs that one first, as ``sitecustomize``, so a forked kernel
starts with what an ordinary kernel of the same Python has.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_the_interpreters_own() -> None:
    for folder in sys.path:
        if os.path.abspath(folder or os.curdir) == HERE:
            continue
        path = os.path.join(folder or os.curdir, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("sitecustomize", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module   # what `import sitecustomize` leaves, as in an ordinary start
            spec.loader.exec_module(module)
            return


if os.environ.get("COURSE_WARM_TEMPLATE"):
    _run_the_interpreters_own()
    from course_tools.warm_kernels import server

    server.install(os.environ["COURSE_WARM_TEMPLATE"], HERE)
