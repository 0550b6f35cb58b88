"""One-off migration of ex02's solution notebook to grader v3 (kept for the record of the change).

The two data answers, BREAKS and RECOMPILES, each get a public test of their form (1 point, the
student's self-check: it cannot tell a right entry from a wrong one) and a hidden test that compares
every entry with torch's own report on the course's functions, asked of ``reference`` (2 points).
The GB id / guard-failure text -> category tables live in the hidden test cells (trusted side).
"""
import nbformat

P = "solutions/ex02_diagnose.ipynb"
nb = nbformat.read(P, as_version=4)
cells = {c.get("id"): c for c in nb.cells}

POINTS = '''**Points:** 6: 3 for `BREAKS` and 3 for `RECOMPILES`. Your answers are two dicts written as
**literals** (`BREAKS = {...}`): the grader reads them without running your notebook. For each dict,
1 point is for its form, checked by the self-check cell after it (`ex02-test-breaks`,
`ex02-test-recompiles`: an entry for every name, each `None` or a category; it passes whether or not
an entry is right), and 2 points for a hidden test that compares every entry with what torch reports
at grading time, on the course's own copy of the functions above. Those 2 points need all entries of
the dict to match (one wrong entry gives 0 of 2 for that dict).'''

SETUP = '''from compile_course import start; start()

import logging
import torch
from torch import nn
from compile_course import CompileWatch, describe_exception, explain, torch_logs
from compile_course.primitives import guard_failures
from compile_course.testing import Namespace, passed

BREAK_CATEGORIES = ["print", "logging", "item", "data-dependent branch"]
RECOMPILE_CATEGORIES = ["shape", "dtype", "requires_grad", "mode", "grad mode"]


def expect_diagnosis(answer, names, categories, what):
    """The form of a diagnosis (not whether it is right): a dict with one entry per name, each None or a category."""
    def shown(items):
        text = ", ".join(repr(i) for i in items[:5]) + (f", ... ({len(items)} in all)" if len(items) > 5 else "")
        return text if len(text) <= 300 else text[:300] + " ..."

    assert isinstance(answer, dict), (f"{what} should be a dict {{name: None or a category}}, "
                                      f"not a {type(answer).__name__}")
    not_names = [k for k in answer if not isinstance(k, str)]
    assert not not_names, f"{what}: each key is a name in quotes, like {next(iter(names))!r}; not {shown(not_names)}"
    missing = [n for n in names if n not in answer]
    assert not missing, f"{what} has no entry for {shown(missing)}"
    extra = [k for k in answer if k not in names]
    assert not extra, f"{what} has entries for names that are not in the exercise: {shown(extra)}"
    unknown = [f"{n}: {v!r}"[:80] for n, v in answer.items()
               if not (v is None or isinstance(v, str) and v in categories)]
    assert not unknown, f"{what}: each value is None or one of {list(categories)}; not {shown(unknown)}"


# The test cells ask `student` about your answers and `reference` about the course's own functions.
# Here both are this notebook; at grading, the grader.
student = reference = Namespace(globals())'''

SHOW = '''print("graph-break categories:", BREAK_CATEGORIES)
print("recompile categories:  ", RECOMPILE_CATEGORIES)'''

RECORD = '''

def recompile_record(name):
    """SEQUENCES[name] run through a fresh CompileWatch(TARGETS[name]): the number of compilations and
    the guard failures (`- 0/0: ...`) of torch's recompiles log."""
    watch = CompileWatch(TARGETS[name], backend="eager")
    SEQUENCES[name](watch)
    return watch.frames, guard_failures(watch.log.messages)'''

TEST_BREAKS = '''answer = student.answer("BREAKS")
expect_diagnosis(answer, FUNCTIONS, BREAK_CATEGORIES, "BREAKS")
passed(f"BREAKS is well formed: an entry for each of the {len(FUNCTIONS)} functions, each None or a category "
       "(whether each entry is right is checked at grading, against torch's graph_breaks log)")'''

HIDDEN_BREAKS = '''# The key is torch's: the graph_breaks log of torch.compile(fn, backend="eager") called on EXAMPLE,
# for the course's own copy of each function; its first break's GB id names the category.
answer = student.answer("BREAKS")
expect_diagnosis(answer, FUNCTIONS, BREAK_CATEGORIES, "BREAKS")
CATEGORY_OF_GB = {"GB0059": "print", "GB0291": "logging", "GB0124": "item", "GB0170": "data-dependent branch"}
wrong = []
for name in FUNCTIONS:
    run = reference.compile(name, (EXAMPLE,))
    assert run.calls[0].ok, f"the course's {name} raised {run.calls[0].error}"
    first = run.breaks[0] if run.breaks else None
    truth = None
    if first is not None:
        truth = CATEGORY_OF_GB.get(first.gb_id)
        if truth == "print" and "`print`" not in first.explanation:
            truth = None              # GB0059 is any builtin Dynamo cannot trace; its explanation names it
        truth = truth or f"unrecognised ({first.gb_id or first.reason[:80]})"
    if answer[name] != truth:
        torch_says = f"{truth!r} ({str(first)[:200]})" if first else "None (no graph break)"
        wrong.append(f"{name}: you said {answer[name]!r}; torch's graph_breaks log says {torch_says}")
assert not wrong, (f"graph breaks: {len(wrong)} of {len(FUNCTIONS)} entries differ from torch's graph_breaks log "
                   "(TORCH_LOGS=graph_breaks):\\n" + "\\n".join(f"  {w}" for w in wrong))
passed(f"your graph-break diagnosis matches torch's graph_breaks log for all {len(FUNCTIONS)} functions")'''

TEST_RECOMPILES = '''answer = student.answer("RECOMPILES")
expect_diagnosis(answer, SEQUENCES, RECOMPILE_CATEGORIES, "RECOMPILES")
passed(f"RECOMPILES is well formed: an entry for each of the {len(SEQUENCES)} sequences, each None or a category "
       "(whether each entry is right is checked at grading, against CompileWatch and torch's recompiles log)")'''

HIDDEN_RECOMPILES = '''# The key is torch's: each sequence run on a fresh CompileWatch (recompile_record, on the
# course's own copy); more than one compilation means a recompile, and the failed guard names the category.
answer = student.answer("RECOMPILES")
expect_diagnosis(answer, SEQUENCES, RECOMPILE_CATEGORIES, "RECOMPILES")
CATEGORY_OF_GUARD = (("size mismatch", "shape"), ("stride mismatch", "shape"), ("dtype mismatch", "dtype"),
                     ("requires_grad mismatch", "requires_grad"), (".training", "mode"), ("grad_mode", "grad mode"))
records = reference.call_each("recompile_record", *[(name,) for name in SEQUENCES])
wrong = []
for name, record in zip(SEQUENCES, records):
    assert record.ok, f"the course's {name} raised {record.error}"
    compilations, failures = record.value
    truth = None
    if compilations > 1:
        truth = next((category for line in failures for phrase, category in CATEGORY_OF_GUARD if phrase in line),
                     f"unrecognised ({(failures or ['no guard failure logged'])[0][:80]})")
    if answer[name] != truth:
        torch_says = f"{truth!r} ({failures[0][:160]})" if truth and failures else repr(truth)
        wrong.append(f"{name}: you said {answer[name]!r}; {compilations} compilation(s), torch says {torch_says}")
assert not wrong, (f"recompilations: {len(wrong)} of {len(SEQUENCES)} entries differ from CompileWatch and "
                   "torch's recompiles log:\\n" + "\\n".join(f"  {w}" for w in wrong))
passed(f"your recompilation diagnosis matches CompileWatch and torch's recompiles log for all {len(SEQUENCES)} "
       "sequences")'''

RECOMPILES_TASK_OLD = ("guard failures in `watch.log` (or torch's own lines, with `torch_logs(recompiles=True)`), "
                       "then write")
RECOMPILES_TASK_NEW = ("guard failures in `watch.log` (or torch's own lines, with `torch_logs(recompiles=True)`;\n"
                       "`recompile_record(name)` returns the count and those lines), then write")


def new_cell(cell_id: str, source: str, kind: str, points: int | None = None):
    cell = nbformat.v4.new_code_cell(source)
    cell.id = cell_id
    cell.metadata["course"] = {"id": cell_id, "kind": kind}
    if points is not None:
        cell.metadata["course"]["points"] = points
    return cell


def insert_after(anchor: str, cell) -> None:
    nb.cells.insert(nb.cells.index(cells[anchor]) + 1, cell)


intro = cells["ex02-intro"]
head, sep, _ = intro.source.partition("**Points:**")
assert sep, "the intro has no Points paragraph"
intro.source = head + POINTS

cells["ex02-setup"].source = SETUP
cells["ex02-setup"].metadata["course"]["setup"] = True
insert_after("ex02-setup", new_cell("ex02-categories", SHOW, "locked"))
cells["ex02-functions"].metadata["course"]["setup"] = True

cells["ex02-test-breaks"].source = TEST_BREAKS
cells["ex02-test-breaks"].metadata["course"]["points"] = 1
insert_after("ex02-test-breaks", new_cell("ex02-hidden-breaks", HIDDEN_BREAKS, "hidden-test", 2))

sequences = cells["ex02-sequences"]
assert "def recompile_record" not in sequences.source
sequences.source = sequences.source.rstrip("\n") + RECORD
sequences.metadata["course"]["setup"] = True
task = cells["ex02-recompiles-task"]
assert RECOMPILES_TASK_OLD in task.source
task.source = task.source.replace(RECOMPILES_TASK_OLD, RECOMPILES_TASK_NEW)

cells["ex02-test-recompiles"].source = TEST_RECOMPILES
cells["ex02-test-recompiles"].metadata["course"]["points"] = 1
insert_after("ex02-test-recompiles", new_cell("ex02-hidden-recompiles", HIDDEN_RECOMPILES, "hidden-test", 2))

for c in nb.cells:
    if c.cell_type == "code":
        c.outputs, c.execution_count = [], None
nbformat.write(nb, P)
