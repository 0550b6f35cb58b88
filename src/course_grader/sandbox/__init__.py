"""Confinement and process lifecycle for untrusted code (the grader's sandbox).

``GradingHost`` (``host.py``) is the only entry: ``notebook_kernel()`` for a submission's
cells, ``measure(harness, entry, payload)`` for one instructor harness call, ``warming()``
while the compile cache is prepared. Every host of a process shares one fork server, which
lives until the process ends or ``close_template()``. The grader's side: ``host.py``, ``policy.py`` (what
is hidden, how runs are confined), ``run.py`` (one run, watched), ``notebook_client.py``, ``measure_client.py``,
``template_client.py``. How a run is confined: ``confine.py``; the fork server: ``template.py``; the children's
side: ``kernel.py``, ``measure.py``; limits: ``limits.py``. What is and is not defended: docs/sandbox.md.
"""

from course_grader.errors import SandboxFault
from course_grader.sandbox.host import GradingHost
from course_grader.sandbox.limits import Limits
from course_grader.sandbox.notebook_client import CellResult, NotebookKernel
from course_grader.sandbox.template_client import close_template

__all__ = ["CellResult", "GradingHost", "Limits", "NotebookKernel", "SandboxFault", "close_template"]
