"""ex02 verdicts: graph breaks and recompiles, diagnosed against torch's own authority.

Answers are literals (``BREAKS = {...}``, ``RECOMPILES = {...}``), parsed here and
never run. The key is computed from torch on every grading run, by a harness that
runs only instructor code: for breaks, the graph-break id that torch's
``graph_breaks`` log names for a default ``torch.compile`` (``explain`` misses a
break before the first captured op, and ``fullgraph=True`` turns on scalar capture
so ``.item()`` compiles there); for recompiles, the frames a ``CompileCounter``
counted and the guard failures of the ``recompiles`` log. Every category below
can match: each is named by an id or phrase torch prints.
"""

from __future__ import annotations

from ..context import AnswerError, GradeContext, TestVerdict

HARNESS = "ex02"
FUNCTIONS = ("scale_and_report", "scale_by_total", "flip_if_negative", "clipped", "logged_scale")
SEQUENCES = ("seq_a", "seq_b", "seq_c", "seq_d", "seq_e", "seq_f")
# The notebook's locked setup cell prints these same lists (a test checks that they agree).
BREAK_CATEGORIES = ("print", "logging", "item", "data-dependent branch")
RECOMPILE_CATEGORIES = ("shape", "dtype", "requires_grad", "mode", "grad mode")

_BREAK_IDS = {"GB0059": "print", "GB0291": "logging", "GB0124": "item", "GB0170": "data-dependent branch"}
_GUARD_PHRASES = (("size mismatch", "shape"), ("stride mismatch", "shape"), ("dtype mismatch", "dtype"),
                  ("requires_grad mismatch", "requires_grad"), (".training", "mode"), ("grad_mode", "grad mode"))


def break_key(logged: list[dict]) -> str | None:
    """The category of the first break torch's graph_breaks log names, or None if it logged none."""
    if not logged:
        return None
    first = logged[0]
    category = _BREAK_IDS.get(first.get("gb"))
    if category == "print" and "`print`" not in first.get("text", ""):
        category = None
    return category or f"unrecognised ({first.get('gb')})"


def recompile_key(frames: int, failures: list[str]) -> str | None:
    """The category of the guard that failed, or None when the counter saw one frame."""
    if frames <= 1:
        return None
    for line in failures:
        for phrase, category in _GUARD_PHRASES:
            if phrase in line:
                return category
    return f"unrecognised ({(failures or ['no guard failure logged'])[0][:80]})"


def _check(answer, key: dict, categories: tuple, what: str, authority: str) -> list[str]:
    if not isinstance(answer, dict):
        raise AnswerError(f"{what}: write a dict literal {{name: None or a category}}, not {type(answer).__name__}")
    problems = []
    missing = [name for name in key if name not in answer]
    extra = [repr(name) for name in answer if name not in key]
    if missing:
        problems.append(f"no entry for {', '.join(missing)}")
    if extra:
        problems.append(f"entries for names that are not in the exercise: {', '.join(extra[:5])}")
    for name, truth in key.items():
        if name not in answer:
            continue
        said = answer[name]
        if said is not None and said not in categories:
            problems.append(f"{name}: {said!r} is not one of {list(categories)}")
        elif said != truth:
            problems.append(f"{name}: you said {said!r}; {authority} says {truth!r}")
    return problems


def grade(ctx: GradeContext) -> list[TestVerdict]:
    answers = {}
    for cell, name in (("ex02-breaks", "BREAKS"), ("ex02-recompiles", "RECOMPILES")):
        try:
            answers[name] = ctx.literal(cell, name)
        except AnswerError as exc:
            answers[name] = exc
    truth = ctx.measure("diagnose", {})
    breaks_key = {n: break_key(truth["breaks"][n]["logged"]) for n in FUNCTIONS}
    recompiles_key = {n: recompile_key(truth["recompiles"][n]["frames"], truth["recompiles"][n]["guard_failures"])
                      for n in SEQUENCES}
    verdicts = []
    for test_id, name, key, categories, authority, what in (
            ("ex02-test-breaks", "BREAKS", breaks_key, BREAK_CATEGORIES,
             "torch's graph_breaks log (TORCH_LOGS=graph_breaks)", "graph breaks"),
            ("ex02-test-recompiles", "RECOMPILES", recompiles_key, RECOMPILE_CATEGORIES,
             "CompileCounter and the recompiles log", "recompilations")):
        answer = answers[name]
        try:
            if isinstance(answer, AnswerError):
                raise answer
            problems = _check(answer, key, categories, what, authority)
        except AnswerError as exc:
            verdicts.append(TestVerdict(test_id, False, str(exc)))
            continue
        if problems:
            verdicts.append(TestVerdict(test_id, False, f"{what}: {len(problems)} problem(s):\n"
                                        + "\n".join(f"  {p}" for p in problems)))
        else:
            verdicts.append(TestVerdict(test_id, True, f"your {what} diagnosis matches {authority} for all {len(key)}"))
    return verdicts
