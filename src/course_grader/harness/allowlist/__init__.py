"""The allow-list for student code that a measuring process will run.

It lives in ``course_grader.harness`` because both sides use it: the trusted side
(``course_grader.verdict``, ``intake``, ``exercise.answers``) before anything is sent, and the measuring
process, where only ``course_grader.harness`` is importable, again before it runs
the code. Its four parts: :mod:`.rules` (what is allowed: ``AllowList``, ``for_cell``, the lists
below, the size-limited ``parse_source``), :mod:`.check` (``check_function`` and the resolution of
module attribute chains), :mod:`.writes` (stores and mutating methods on objects the function did not
build) and :mod:`.extract` (``extract_function``, ``measured_namespace``, ``load_checked``). Import
each name from its module; this package holds no code.

A measured answer (ex01's rewrite, ex03's warm-up, ex04's fixture, ex05's timing
function) reaches a sandboxed measuring process only as the source of one
function that passes :func:`.check.check_function`. It is an allow-list: a construct
is accepted because it is listed in :mod:`.rules`, never because nobody thought to forbid
it.

Accepted: the node types in ``ALLOWED_NODES``; names that are the function's
own parameters and locals, the exercise's provided names, the builtins in
``SAFE_BUILTINS``, and the cell's own top-level helper functions and constants
(whose expressions pass the same check). Attribute *loads* whose names do not
start with ``_``, plus the exact dotted paths an exercise lists
(``torch._dynamo.reset``).

Every attribute chain rooted at a provided module (``torch``, ``nn``, ``time``,
``copy``) is resolved over the real attributes, in the grader and again in the
measuring process: each step must be a module under that root, or something
that root's modules define; ``torch.os``, ``torch.sys``, ``torch.builtins`` and
the like are other modules and are rejected. A module may only start a longer
chain or be given a plain local name; passed anywhere else it could not be checked.

Rejected, each with a message a student can act on: attribute stores and
deletes, subscript stores and mutating methods (``.update``, ``.clear``, ``.add_``...) on what a
module or the exercise holds (``torch._dynamo.utils.counters["inductor"][k] = v``),
``_``/dunder attribute access outside the listed paths, ``.format``
(string formatting can read attributes by name), the frame, generator and code
attributes that have no ``_`` (``gi_frame``, ``f_back``, ``f_globals``...), the torch.fx graph
surgery and code generation a callable ``backend=`` is handed (``.graph``, ``.recompile``,
``.call_method``...), the ways to a tensor's memory that its version counter does not see (``.data``,
``.numpy``, ``set_``, a storage, ``apply_``, ``copy.copy``...: ex05's stopwatch knows from that counter that
x was not changed), names of the introspection and I/O builtins (``getattr``, ``eval``,
``open`` ...), imports other than the listed modules, ``global``/``nonlocal``, decorators, classes (unless allowed),
generators and ``async``, oversized or overly deep code.

What it does not do: decide whether the code is *right*, or stop it from using
CPU or memory. The harness measures it, the sandbox limits it, and the trusted
side judges the data it returns.
"""
