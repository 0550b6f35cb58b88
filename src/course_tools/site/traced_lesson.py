"""The lesson function whose ``TORCH_TRACE`` becomes the site's tlparse report.

Run as ``python -m course_tools.site.traced_lesson`` with ``TORCH_TRACE``
set: torch reads that variable when it is imported, so the trace needs a
process of its own (``tlparse_report`` starts it). The function is notebook
04's ``branch_on_values``: a branch on a tensor's value breaks the graph, and
the calls below add a size change that fails a guard and recompiles, so one
report shows both diagnoses, the resume functions and the guards.
"""

from __future__ import annotations

import torch

# What each call is for; tlparse shows the compiles they cause, in this order.
CALLS = (
    ("3 elements, sum > 0: first compile, graph break at the if", 3, 1.0),
    ("3 elements, sum > 0: reuses the cached graphs", 3, 1.0),
    ("3 elements, sum < 0: the other branch's resume function is compiled", 3, -1.0),
    ("5 elements, sum > 0: size guard fails, recompile", 5, 1.0),
)


def branch_on_values(x):
    if x.sum() > 0:
        return x * x
    return -x


def main() -> None:
    compiled = torch.compile(branch_on_values, backend="eager")
    for label, length, sign in CALLS:
        x = sign * torch.arange(1, length + 1, dtype=torch.float64)
        compiled(x)
        print(f"  traced call: {label}")


if __name__ == "__main__":
    main()
