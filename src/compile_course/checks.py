"""Self-checks for the exercises' public test cells, run in the student's own kernel.

Each helper prints one ``✓`` line or raises an ``AssertionError`` that says what to
look at. They check the student's *own code* against the exercise's contract
(capture, values, gradients) or the *form* of a data answer. None of them knows
a graded answer: which call breaks or recompiles is decided at grading, by the
grader, from what torch reports there. A passing self-check on a data answer
therefore means "well formed", not "right".
"""

from __future__ import annotations

import torch

from .comparison import Case, compare
from .diagnostics import describe_exception, explain


def passed(message: str) -> None:
    """The success line a test cell ends with."""
    print(f"✓ {message}")


# ------------------------------------------------------------------ capture

def expect_single_graph(fn, *args, name: str | None = None) -> None:
    """``fn`` compiles with ``fullgraph=True`` (the authority), and ``explain`` shows 1 graph, 0 breaks."""
    name = name or getattr(fn, "__name__", "your function")
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    except Exception as exc:  # report PyTorch's own reason, without paths
        raise AssertionError(f"{name}: torch.compile(..., fullgraph=True) raised {describe_exception(exc)}") from None
    report = explain(fn, *args)
    assert report.graph_count == 1 and report.break_count == 0 and not report.breaks, (
        f"{name}: torch._dynamo.explain reports {report.graph_count} graph(s) and "
        f"{report.break_count} graph break(s); the contract is 1 graph, 0 breaks.\n{report}\n"
        "Look at the break reason: which Python line needs a tensor value?")


def expect_equivalent(reference, candidate, cases: list[Case], what: str) -> None:
    """``candidate`` agrees with ``reference`` on ``cases``, as ``compare`` judges it.

    Values, dtypes, errors and gradients; an output's sign of zero counts, a gradient's
    does not (the rule is stated once, in ``compile_course.comparison``).
    """
    report = compare(reference, candidate, cases)
    assert report.ok, f"{what}: your version and the reference disagree. Rows marked FAIL show where:\n{report}"


def compiled_per_call(fn, **compile_kwargs):
    """``fn`` compiled afresh on every call, as the grader does for each case.

    One compiled function called on many cases may recompile for each new dtype or shape,
    and under ``fullgraph=True`` the recompile limit (``torch._dynamo.config.recompile_limit``)
    raises instead of falling back to eager. A fresh compile per case keeps a case
    from failing because of the cases before it.
    """
    def call(*args):
        torch._dynamo.reset()
        return torch.compile(fn, **compile_kwargs)(*args)

    call.__name__ = getattr(fn, "__name__", "compiled")
    return call


# ------------------------------------------------------------------ data answers (form only)

def expect_answer_format(answer, names, categories, what: str) -> None:
    """``answer`` is a dict with one entry per name, each ``None`` or one of ``categories``.

    It says nothing about whether an entry is right: that is decided at grading.
    """
    assert answer is not None, (f"{what} is not defined: replace the `raise NotImplementedError(...)` line with "
                                f"`{what} = {{...}}` and run that cell")
    assert isinstance(answer, dict), (f"{what} should be a dict {{name: None or a category}}, "
                                      f"not {type(answer).__name__}")
    missing = [n for n in names if n not in answer]
    assert not missing, f"{what} has no entry for {missing}"
    extra = [n for n in answer if n not in names]
    assert not extra, f"{what} has entries for names that are not in the exercise: {extra}"
    unknown = {n: v for n, v in answer.items() if v is not None and v not in categories}
    assert not unknown, f"{what}: these values are not None or one of {list(categories)}: {unknown}"


def expect_count_list(answer, calls: int, what: str) -> None:
    """``answer`` is a list of ``calls`` non-negative integers (its form only)."""
    assert answer is not None, (f"{what} is not defined: replace the `raise NotImplementedError(...)` line with "
                                f"`{what} = [...]` and run that cell")
    assert isinstance(answer, list), f"{what} should be a list of integers, not {type(answer).__name__}"
    assert len(answer) == calls, f"{what}: {calls} calls, so {calls} predictions; you wrote {len(answer)}"
    bad = [a for a in answer if type(a) is not int or a < 0]
    assert not bad, f"{what}: each prediction is a whole number of new compilations (0, 1, ...), not {bad}"
