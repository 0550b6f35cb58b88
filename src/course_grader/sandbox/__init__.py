"""Confinement and process lifecycle for untrusted code (the grader's sandbox).

``GradingHost`` (``host.py``) is the only entry: ``notebook_kernel()`` for a submission's
cells, ``measure(harness, entry, payload)`` for one instructor harness call, ``warming()``
while the compile cache is prepared. Every host of a process shares one fork server, which
lives until the process ends or ``close_template()``. How a run is confined: ``confine.py``; the fork
server: ``template.py``; the children's side: ``kernel.py``, ``measure.py``; limits:
``limits.py``. What is and is not defended: docs/sandbox.md.
"""

from course_grader.sandbox.host import CellResult, GradingHost, NotebookKernel, SandboxFault, close_template
from course_grader.sandbox.limits import Limits

__all__ = ["CellResult", "GradingHost", "Limits", "NotebookKernel", "SandboxFault", "close_template"]
