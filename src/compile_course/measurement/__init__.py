"""What a test cell can ask of a function, answered in torch's own words, as records of plain data.

One package serves three callers with the same code: a test cell in the student's notebook (through
``compile_course.testing.Student``, in the student's kernel); the grader's sandboxed child, which
loads a submission's function and answers one request (``course_grader.harness.child``); and
instructor code that needs torch's answer for its own functions (``reference``).

Its modules, each one job:

* ``codec``: values as JSON data and back (``to_data``, ``from_data``), the tensor codec, and
  :class:`ReplyError`: the one place where a reply is validated;
* ``records``: :class:`CallResult`, :class:`Run`, :class:`Break`, :class:`Timing` and a
  stopwatch's timeline, each with ``to_data`` and a validating ``from_data``;
* ``graphs``: a graph Dynamo captured, as data (``graph_data``);
* ``run``: the measurements themselves (``call_one``, ``compile_run``, ``time_calls``);
* ``spy``: recording how a function is called (:class:`Spy`) and remaking those calls.

The names below are the package's public ones, each defined in one of those modules;
``from compile_course import measurement as measure`` gives a caller all of them.
(``compile_course.measure`` is the timing helper the lessons import, hence this package's name.)
"""

from __future__ import annotations

from . import codec, graphs, records, run, spy
from .codec import AnswerError, Opaque, ReplyError, error_text, from_data, to_data
from .graphs import graph_data
from .records import Break, CallResult, Run, Timing, parse_break, read_timeline
from .run import call_one, compile_run, compile_stats, restore_global_state, time_calls, upstream_gradient
from .spy import Spy, describe_arg, make_spied_args, make_spied_call, read_spy_calls

__all__ = ["AnswerError", "Break", "CallResult", "Opaque", "ReplyError", "Run", "Spy", "Timing", "call_one",
           "compile_run", "compile_stats", "describe_arg", "error_text", "from_data", "graph_data",
           "make_spied_args", "make_spied_call", "parse_break", "read_spy_calls", "read_timeline",
           "restore_global_state", "time_calls", "to_data", "upstream_gradient"]

# The package and every module of it: an object defined here belongs to the test API
# (``compile_course.testing.is_test_api``), which a measured function never holds.
MODULES = frozenset({__name__, *(m.__name__ for m in (codec, graphs, records, run, spy))})
