"""Run a lesson's small script in a fresh Python, as a learner would run ``python script.py``.

The script runs with the course's stderr policy (:mod:`compile_course.quiet`): its one standing rule,
that the CUDA build's "No CUDA runtime is found" notice is not a diagnostic, holds in the child as in the
notebook. Every line torch logs under ``TORCH_LOGS`` or ``TORCH_TRACE`` is kept, in order with the
script's prints. The script itself runs as ``python -u script.py``, so the stacks torch logs are the
script's own: the policy reaches the child as a ``sitecustomize`` module (Python imports it at start-up,
before the script's ``import torch``; the notice is logged when inductor first loads
``torch.utils.cpp_extension``), from a folder beside the script on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

POLICY = "import compile_course.quiet  # the course's stderr policy, before the script imports torch\n"
TIMEOUT_S = 900


def run_script(source: str, **env: str) -> tuple[Path, str]:
    """Run ``source`` as ``script.py`` in a fresh Python in a new temp folder, with its own inductor cache
    and ``env`` added to the environment; ``(folder, everything it printed)``, stdout and stderr merged."""
    folder = Path(tempfile.mkdtemp())
    (folder / "script.py").write_text(source)
    policy = folder / ".policy"
    policy.mkdir()
    (policy / "sitecustomize.py").write_text(POLICY)
    path = os.pathsep.join(p for p in (str(policy), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(folder / "inductor-cache"), PYTHONPATH=path, **env)
    run = subprocess.run([sys.executable, "-u", "script.py"], cwd=folder, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)  # -u: prints and logs in order
    return folder, run.stdout
