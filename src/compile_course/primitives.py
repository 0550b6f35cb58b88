"""Old home of the measurement code, kept for one release: every name now lives in ``compile_course.measurement``.

The exercise notebooks' locked cells (and so every submission already handed out) import from
here (``from compile_course.primitives import describe_arg``), so this module re-exports each name
it used to define from its new module. New code imports ``compile_course.measurement``; this file
goes once the notebooks do.
"""

from __future__ import annotations

from .diagnostics import collected_logs, gb_id, guard_failures  # noqa: F401  (were importable from here)
from .measurement.codec import (  # noqa: F401
    FILE_PATHS,
    MAX_DEPTH,
    MAX_ERROR,
    MAX_INT,
    MAX_ITEMS,
    MAX_TENSOR_BYTES,
    MAX_TEXT,
    TENSOR_DTYPES,
    AnswerError,
    Opaque,
    ReplyError,
    apply_marks,
    decode_tensor,
    encode_tensor,
    error_text,
    from_data,
    tensor_marks,
    to_data,
    to_data_safe,
    to_data_safe_data,
)
from .measurement.graphs import graph_data  # noqa: F401
from .measurement.records import (  # noqa: F401
    CALL_KEYS,
    COMPILE_KEYS,
    COMPILE_STATS,
    MAX_CALLS,
    MAX_COMPILES,
    Break,
    CallResult,
    Run,
    Timing,
    parse_break,
    read_timeline,
)
from .measurement.run import call_one, compile_run, compile_stats, restore_global_state, time_calls, upstream_gradient  # noqa: F401
from .measurement.spy import MAX_KEYWORD, Spy, describe_arg, make_spied_args, make_spied_call, read_spy_calls  # noqa: F401
