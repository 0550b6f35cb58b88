"""A stand-in that times every call made of a function, and what ``torch.compile`` was asked of it.

A timing exercise hands the student's routine ``stopwatch("fused")`` instead of ``fused``. Each call
of the stand-in, eager or through ``torch.compile(stand_in, ...)``, is recorded by the course's code
around the real call: its start and end on ``time.perf_counter`` (seconds from the stopwatch's
creation), and the stand-in's own entry and exit around all of its work (``enter``, ``exit``), its
arguments (as ``measurement.spy.describe_arg``), and for a compiled call the graphs Dynamo
compiled and inductor's FX graph cache hits and misses during it, ``torch.get_num_threads()`` (read
before the clock starts and after it stops; 0 when the two differ), the grad mode it ran under
(``torch.is_grad_enabled()``), the name of the exception it raised (``raised``; None when it returned),
and ``given``: whether its tensor arguments were the tensors the routine was given, unchanged (see below).
Every ``torch.compile`` call of the stand-in is recorded with its options (backend, fullgraph, dynamic, mode).

A figure the routine reports for call ``i`` was measured around that call, so it is at least the
stand-in's own span (enter to exit), and at most that span plus what the routine's timer itself adds
(``SPAN_FACTOR`` times the span, plus ``SPAN_ALLOWANCE_S``; for a first call, a single reading, plus
``FIRST_ALLOWANCE_S``), and never more than the gap between the calls before and after it (from the
previous call's exit to the next call's enter): the call's window. The gap alone is no bound: a routine
may run anything between its calls, a ``time.sleep`` inside its timer too, which would let any figure up
to the gap pass. A "fastest" figure is the minimum of such readings, so no steady call whose whole
window lies below it can be among the calls it was taken over: the fastest of all the steady calls has
(but for a timer interrupted far longer than the call) none below it, and one taken over the calls a
routine chose (after warm-up calls, say) has only the calls it left out. :func:`unmeasured` says where a
report's figures do not hold, and never prints the recorded times (what the grader saw is not a hint).

Figures compare only when their calls did the same work: a report is refused when its calls ran under
different thread counts (``torch.set_num_threads(1)`` around eager, 2 around compiled: a speedup the
compiler did not earn) or grad modes, when a call raised (``torch.compiler.set_stance("fail_on_recompile")``
makes a compiled call raise at once: no work, a tiny time), or when a call's tensor arguments were not
the tensors the routine was given (``x * inf`` has x's form, and sends ``sin`` down a slow path). For the
last, :meth:`Stopwatch.hooked` is told the routine's arguments (``given``) and keeps a copy of each tensor
among them; a call notes each tensor argument, its ``_version`` (torch's count of in-place writes),
``data_ptr()`` and ``SAMPLED`` of its elements at random places (about 2 us, inside the routine's timer,
alike for eager and compiled calls), and once the routine has returned :meth:`Stopwatch.timeline`
checks, outside any timing, that each was a given tensor with its version and memory as they were given,
or an unchanged copy of one (``x.clone()`` passes: equal values, not written since the call), that the
sampled elements were the given values, and that the given tensors are unchanged (version, memory and
values) when the routine returns. A write that torch's version counter does not see (through ``.data``,
``.numpy()``, ``set_``, a storage, ``copy.copy``...) could change x and put it back unseen: measured code
may not use those (``course_grader.harness.allowlist.rules.ALIASING_ATTRIBUTES``), and a way around that
list still shows in the sampled elements unless it changes very few of x's elements.

The records sit in closures: the stand-in and the compiled functions it hands out are plain
functions with no attribute leading to them. ``torch.compile`` is replaced only while
:meth:`Stopwatch.hooked` is active (around one call of the routine, and its loading at grading).
"""

from .recorder import CHANGED_DURING_CALL, MAX_KEPT_INPUTS, PLACES, SAMPLED, Stopwatch, hooked
from .rules import (
                    CLOCK_SLACK_S,
                    FASTER_SHARE,
                    FIGURES,
                    FIRST_ALLOWANCE_S,
                    MIN_STEADY_CALLS,
                    PADDED,
                    SPAN_ALLOWANCE_S,
                    SPAN_FACTOR,
                    allowed_faster,
                    compiled_with,
                    most_read,
                    raised,
                    surely_faster,
                    unequal_grad_modes,
                    unequal_threads,
                    unmeasured,
)

__all__ = ["CHANGED_DURING_CALL", "CLOCK_SLACK_S", "FASTER_SHARE", "FIGURES", "FIRST_ALLOWANCE_S",
           "MAX_KEPT_INPUTS", "MIN_STEADY_CALLS", "PADDED", "PLACES", "SAMPLED", "SPAN_ALLOWANCE_S",
           "SPAN_FACTOR", "Stopwatch", "allowed_faster", "compiled_with", "hooked", "most_read", "raised",
           "surely_faster", "unequal_grad_modes", "unequal_threads", "unmeasured"]
