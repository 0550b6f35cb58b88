"""Assertions for the exercises' test cells.

Each helper asks PyTorch's own tools (through ``compile_course.diagnostics``
and ``compile_course.comparison``) what actually happens, compares that with the
student's code or answer, and either prints one ``✓`` line or raises an
``AssertionError`` that says what to look at. Nothing here hard-codes which
call breaks or recompiles: the categories below only name what the live
diagnostic text says.
"""

from __future__ import annotations

import torch

from .comparison import Case, compare
from .diagnostics import CompileWatch, describe_exception, explain

# Reason categories, each recognised by phrases in PyTorch's own messages
# (explain's break reasons; the recompiles log's guard failures). Order matters:
# the first match wins.
BREAK_CATEGORIES = [
    ("item", ("tensor.item()", ".item()", "tolist")),
    ("data-dependent branch", ("generic_jump", "data-dependent", "data dependent")),
    ("print", ("print",)),
]
RECOMPILE_CATEGORIES = [
    ("shape", ("size mismatch", "stride mismatch", "size(")),
    ("dtype", ("dtype mismatch",)),
    ("requires_grad", ("requires_grad mismatch",)),
    ("mode", (".training", "grad_mode")),
]
CATEGORIES = sorted({c for c, _ in BREAK_CATEGORIES} | {c for c, _ in RECOMPILE_CATEGORIES})


def passed(message: str) -> None:
    """The success line a test cell ends with."""
    print(f"✓ {message}")


def _classify(text: str, table) -> str:
    low = text.lower()
    for category, phrases in table:
        if any(p in low for p in phrases):
            return category
    return f"unrecognised ({text.strip()[:80]})"


def break_category(reason: str) -> str:
    """Category of one graph-break reason from ``explain``."""
    return _classify(reason, BREAK_CATEGORIES)


def recompile_categories(lines: list[str]) -> set[str]:
    """Categories of the guard failures in normalized recompiles-log lines."""
    return {_classify(line, RECOMPILE_CATEGORIES) for line in lines if "failed:" in line}


# ------------------------------------------------------------------ capture

def expect_single_graph(fn, *args, name: str | None = None) -> None:
    """``fn`` captures as one graph with no break, and compiles with ``fullgraph=True``."""
    name = name or getattr(fn, "__name__", "your function")
    report = explain(fn, *args)
    assert report.graph_count == 1 and report.break_count == 0 and not report.breaks, (
        f"{name}: torch._dynamo.explain reports {report.graph_count} graph(s) and "
        f"{report.break_count} graph break(s); the contract is 1 graph, 0 breaks.\n{report}\n"
        "Look at the break reason: which Python line needs a tensor value?")
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    except Exception as exc:  # report PyTorch's own reason, without paths
        raise AssertionError(f"{name}: torch.compile(..., fullgraph=True) raised {describe_exception(exc)}") from None


def expect_equivalent(reference, candidate, cases: list[Case], what: str) -> None:
    """``candidate`` agrees with ``reference`` (values, dtypes, errors, gradients) on ``cases``."""
    report = compare(reference, candidate, cases)
    assert report.ok, f"{what}: your version and the reference disagree. Rows marked FAIL show where:\n{report}"


# ------------------------------------------------------------------ diagnosis

def live_breaks(functions: dict, *args) -> dict:
    """``{name: category or None}`` from ``explain`` on each function, now."""
    live = {}
    for name, fn in functions.items():
        report = explain(fn, *args)
        # A break with no op after it leaves graph/break counts unchanged but is
        # still listed with its reason, so the listed reasons decide.
        if report.breaks:
            live[name] = break_category(report.breaks[0].reason)
        else:
            live[name] = "unrecognised (break without a reason)" if report.break_count > 0 else None
    return live


def live_recompiles(sequences: dict, targets: dict) -> dict:
    """``{name: set of categories}`` (empty: no recompile) from CompileWatch, now.

    ``sequences[name](watch)`` makes the calls; ``targets[name]`` is what to compile.
    """
    live = {}
    for name, run in sequences.items():
        watch = CompileWatch(targets[name], backend="eager")
        run(watch)
        live[name] = recompile_categories(watch.log.lines()) if watch.frames > 1 else set()
    return live


def expect_diagnosis(answer: dict, live: dict, what: str) -> None:
    """The student's ``{name: category or None}`` matches the live diagnosis.

    ``live`` values are a category (or None) for breaks, or a set of
    acceptable categories (empty: nothing happened) for recompiles.
    """
    assert isinstance(answer, dict), f"{what}: answer with a dict {{name: reason or None}}, got {type(answer).__name__}"
    missing = sorted(set(live) - set(answer))
    assert not missing, f"{what}: your answer has no entry for {missing}"
    wrong = []
    for name, seen in live.items():
        said = answer[name]
        ok_set = seen if isinstance(seen, set) else ({seen} if seen else set())
        if said is not None and said not in CATEGORIES:
            wrong.append(f"  {name}: {said!r} is not one of the reason categories {CATEGORIES}")
        elif bool(said) != bool(ok_set):
            wrong.append(f"  {name}: you said {'no' if not said else said!r}; PyTorch reports "
                         f"{'nothing' if not ok_set else ' or '.join(sorted(ok_set))}")
        elif said and said not in ok_set:
            wrong.append(f"  {name}: it does happen, but PyTorch's reason is {' or '.join(sorted(ok_set))}, not {said!r}")
    assert not wrong, f"{what}: {len(wrong)} of {len(live)} answers disagree with PyTorch's diagnostics:\n" + "\n".join(wrong)


# ------------------------------------------------------------------ recompiles

def expect_counts(predicted, watch: CompileWatch, what: str) -> None:
    """Predicted new compilations per call equal what ``watch`` counted."""
    actual = [new for _, new in watch.calls]
    predicted = list(predicted)
    assert len(predicted) == len(actual), f"{what}: predict one count per call: {len(actual)} calls, {len(predicted)} predictions"
    wrong = [f"  call {i} {label}: predicted {p}, CompileWatch counted {new}"
             for i, ((label, new), p) in enumerate(zip(watch.calls, predicted), 1) if p != new]
    assert not wrong, (f"{what}: {len(wrong)} of {len(actual)} predictions differ from the live count:\n"
                       + "\n".join(wrong) + f"\nRecompiles log:\n{watch.log}")
