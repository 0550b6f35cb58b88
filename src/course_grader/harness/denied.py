"""The parts of torch that student code never reaches: one table, read by the allow-list and by the replay.

Two checks refuse parts of torch, each for its own untrusted input:

* **measured code** (``allowlist.check.resolve_chain``, in the grader and again in the measuring
  child): an attribute chain rooted at ``torch`` that reaches ``torch.<entry>`` or anything below it is
  refused, unless the solution cell's ``allow`` list names one exact path below it
  (``torch.library.custom_op`` opens that name only). :data:`MEASURED_PATHS` lists those paths.
* **a replayed graph** (``child.resolve``, which the grader's ``verdict.graphcheck`` validates with
  before a child replays): a call target that names an entry *anywhere* in its dotted name
  (``torch.load``, and ``torch.nn.functional.torch.load`` too) is refused. :data:`REPLAY_DENIED` is that
  test, a regular expression built from the same table.

Where the two differ, the difference is data: the ``Refused`` of each entry. A replay refuses every
entry: it re-runs a Dynamo graph of torch ops and needs none of them. Measured code is refused only
those marked ``IN_MEASURED_CODE``: what loads code, touches files, starts processes, rewrites graphs or
overrides torch. The entries marked ``IN_REPLAY`` alone are what an honest answer does (compile, seed,
differentiate, test, read ``torch.backends``) but a replay must not: it is a pure function of the
graph and its inputs, and computes gradients itself.

What is not here: the tensor methods a replayed graph may not call (``call_method`` nodes:
``verdict.graphcheck.DENIED_METHODS``, names of methods, not parts of torch), and the attribute names
measured code may never use whatever the object (``allowlist.rules``).
"""

from __future__ import annotations

import re
from enum import Flag, auto


class Refused(Flag):
    """Where a part of torch is refused."""

    IN_MEASURED_CODE = auto()   # an attribute chain of a student's measured function
    IN_REPLAY = auto()          # a call target of a graph re-run by a child that runs no student code


EVERYWHERE = Refused.IN_MEASURED_CODE | Refused.IN_REPLAY
REPLAY_ONLY = Refused.IN_REPLAY

# Each entry is a dotted name below ``torch``.
DENIED: dict[str, Refused] = {
    # load code, touch files or start processes
    "hub": EVERYWHERE, "load": EVERYWHERE, "save": EVERYWHERE, "serialization": EVERYWHERE,
    "package": EVERYWHERE, "utils": EVERYWHERE, "ops.load_library": EVERYWHERE, "classes": EVERYWHERE,
    "multiprocessing": EVERYWHERE, "distributed": EVERYWHERE, "cuda": EVERYWHERE,
    "from_file": EVERYWHERE, "PyTorchFileReader": EVERYWHERE, "PyTorchFileWriter": EVERYWHERE,
    # introspection and code generation: getattr by string (torch.ao...getattr_from_fqn), graph and module
    # surgery, overrides of torch functions, code loading and export
    "ao": EVERYWHERE, "fx": EVERYWHERE, "overrides": EVERYWHERE, "jit": EVERYWHERE, "export": EVERYWHERE,
    "onnx": EVERYWHERE, "library": EVERYWHERE, "profiler": EVERYWHERE, "monitor": EVERYWHERE,
    "storage": EVERYWHERE, "autograd.graph": EVERYWHERE, "autograd.forward_ad": EVERYWHERE,
    # compiled code and cache entries loaded from bytes or files, a default backend that may be a function
    # (see harness.child.compile_guarded), compiler settings
    "compiler.load_cache_artifacts": EVERYWHERE, "compiler.save_cache_artifacts": EVERYWHERE,
    "compiler.load_compiled_function": EVERYWHERE, "compiler.precompile": EVERYWHERE,
    "compiler.set_default_backend": EVERYWHERE, "compiler.config": EVERYWHERE,
    # wherever a graph names them from (torch.utils.cpp_extension, torch.classes.load_library)
    "cpp_extension": REPLAY_ONLY, "load_library": REPLAY_ONLY,
    # what measured code may do, and a replay may not: compile or trace, differentiate, seed or change
    # torch's settings, run torch's test helpers
    "compile": REPLAY_ONLY, "_dynamo": REPLAY_ONLY, "ops.higher_order": REPLAY_ONLY, "autograd": REPLAY_ONLY,
    "manual_seed": REPLAY_ONLY, "random": REPLAY_ONLY, "set_": REPLAY_ONLY, "backends": REPLAY_ONLY,
    "_logging": REPLAY_ONLY, "testing": REPLAY_ONLY,
    # a whole segment `_set` under `_C` (not a prefix: Dynamo's graphs of `torch.no_grad()` code call
    # torch._C._set_grad_enabled, which a replay runs)
    "_C._set": REPLAY_ONLY,
}

MEASURED_PATHS: tuple[str, ...] = tuple(f"torch.{name}" for name, where in DENIED.items()
                                        if Refused.IN_MEASURED_CODE in where)
REPLAY_DENIED: re.Pattern[str] = re.compile(
    r"(^|\.)(" + "|".join(re.escape(name) for name, where in DENIED.items() if Refused.IN_REPLAY in where)
    + r")(\.|$)")


def measured_denial(path: str) -> str | None:
    """The entry of :data:`MEASURED_PATHS` that ``path`` (``torch.hub.load``) is, or is below; else None."""
    return next((d for d in MEASURED_PATHS if path == d or path.startswith(d + ".")), None)
