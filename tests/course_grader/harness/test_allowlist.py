"""The allow-list: every forbidden construct is rejected with a clear message; honest code passes."""

from __future__ import annotations

import re

import pytest

from course_grader.errors import AllowListError
from course_grader.harness.allowlist.extract import extract_function, load_checked
from course_grader.harness.allowlist.rules import AllowList

ALLOWED = AllowList(provided=frozenset({"torch"}), imports=frozenset({"time"}),
                    dotted=frozenset({"torch._dynamo.reset", "torch._dynamo.utils.counters"}))


def body(*lines: str) -> str:
    return "def f(x):\n" + "\n".join("    " + line for line in lines) + "\n"


REJECTED = [
    (body("x.data = x"), "assigning to an attribute"),
    (body("torch.where = None"), "assigning to an attribute"),
    (body("del x.grad"), "`del`"),
    (body("return x.__class__"), "`x.__class__`"),
    (body("return x._base"), "`x._base`"),
    (body("return torch._dynamo.config"), "`torch._dynamo.config`"),
    (body("return torch._dynamo.eval_frame.OptimizedModule"), "torch._dynamo.eval_frame"),
    (body("t = torch", "return t._dynamo.reset"), "`t._dynamo.reset`"),
    (body("return (x + 1)._version"), "attributes starting with `_`"),
    (body("return torch._dynamo.reset._x"), "torch._dynamo.reset._x"),
    (body("return getattr(torch, '_dyn' + 'amo')"), "`getattr` is not allowed"),
    (body("return hasattr(x, '_orig_mod')"), "`hasattr` is not allowed"),
    (body("setattr(torch, 'where', None)"), "`setattr` is not allowed"),
    (body("return vars(torch)"), "`vars` is not allowed"),
    (body("return globals()"), "`globals` is not allowed"),
    (body("return locals()"), "`locals` is not allowed"),
    (body("return eval('1')"), "`eval` is not allowed"),
    (body("exec('x = 1')"), "`exec` is not allowed"),
    (body("return compile('1', 's', 'eval')"), "`compile` is not allowed"),
    (body("return __import__('os')"), "`__import__` is not allowed"),
    (body("return open('/etc/passwd').read()"), "`open` is not allowed"),
    (body("return input()"), "`input` is not allowed"),
    (body("breakpoint()"), "`breakpoint` is not allowed"),
    (body("return type(x)"), "`type` is not allowed"),
    (body("return __builtins__"), "`__builtins__` is not allowed"),
    (body("return '{0.__class__}'.format(x)"), "`.format(...)` is not allowed"),
    (body("return '{0._base}'.format_map({})"), "`.format_map(...)` is not allowed"),
    (body("import os"), "`import os` is not allowed"),
    (body("import time as t, subprocess"), "`import subprocess` is not allowed"),
    (body("from os import path"), "`from os import` is not allowed"),
    (body("from time import *"), "import names one by one"),
    (body("from . import x"), "`from . import` is not allowed"),
    (body("global y", "y = 1"), "`global`"),
    (body("def g():", "    nonlocal x", "return x"), "`nonlocal`"),
    (body("class Fake:", "    pass"), "a class definition"),
    (body("yield x"), "`yield`"),
    (body("return y"), "`y` is not available"),
    (body("return sys.modules"), "`sys` is not available"),
    (body("match x:", "    case _:", "        pass"), "`match`"),
    ("async def f(x):\n    return x\n", "not `async def`"),
    ("@torch.no_grad()\ndef f(x):\n    return x\n", "decorators are not allowed"),
    (body("return " + "-" * 5000 + "x"), "nested"),
    (body("return '" + "a" * 6000 + "'"), "string constant longer"),
    # a running generator's frame leads, with no `_` name, to its caller's globals (the hostile corpus)
    (body("g = (g.gi_frame.f_back.f_globals for _ in [0])", "return next(g)"), "`.gi_frame` is not allowed"),
    (body("g = (i for i in [0])", "return g.gi_code.co_consts"), "`.gi_code` is not allowed"),
    (body("try:", "    1 / 0", "except ZeroDivisionError as e:", "    return e.with_traceback(None).tb_frame"),
     "`.tb_frame` is not allowed"),
    (body("return x, x.f_back"), "`.f_back` is not allowed"),
    # a callable backend is handed the torch.fx graph, whose node targets become source that recompile() execs
    (body("def grab(gm, inputs):", "    with gm.graph.inserting_before(list(gm.graph.nodes)[-1]):",
          "        gm.graph.call_method('x\", 0) or __import__(\"os\") or (\"', (x,))", "    gm.recompile()",
          "    return gm", "return torch.compile(lambda t: t, backend=grab)(x)"), "regenerates a torch.fx graph"),
    (body("def grab(gm, inputs):", "    return gm.recompile()", "return torch.compile(lambda t: t, backend=grab)(x)"),
     "`.recompile` is not allowed"),
    (body("def post(g):", "    g.placeholder('y')",
          "return torch.compile(lambda t: t, options={'post_grad_custom_post_pass': post})(x)"),
     "`.placeholder` is not allowed"),
    # ways to x's memory that its version counter does not see (the ex05 stopwatch reads it): closed
    (body("x.data.mul_(2)"), "`.data` is not allowed: it reaches a tensor's memory behind torch's count"),
    (body("a = x.numpy()", "a[0] = 1.0"), "`.numpy` is not allowed"),
    (body("return torch.from_numpy(x)"), "`.from_numpy` is not allowed"),
    (body("return torch.frombuffer(x, dtype=torch.float32)"), "`.frombuffer` is not allowed"),
    (body("return torch.from_dlpack(x)"), "`.from_dlpack` is not allowed"),
    (body("return torch.empty(0).set_(x)"), "`.set_` is not allowed"),
    (body("return torch.Tensor.set_(torch.empty(0), x)"), "`.set_` is not allowed"),
    (body("return torch.ops.aten.set_(torch.empty(0), x)"), "`.set_` is not allowed"),
    (body("return x.untyped_storage()"), "`.untyped_storage` is not allowed"),
    (body("return x.storage()"), "`.storage` is not allowed"),
    (body("return x.apply_(abs)"), "`.apply_` is not allowed"),
    (body("return x.map_(x, max)"), "`.map_` is not allowed"),
    (body("return torch.unsafe_split(x, 2)"), "`.unsafe_split` is not allowed"),
    (body("return x.unsafe_chunk(2)"), "`.unsafe_chunk` is not allowed"),
    (body("return torch.nn.Parameter(x).data"), "`.data` is not allowed"),
    (body("return x", "return x"), None),  # accepted: control
    (body("return x.detach().clone()"), None),  # counted: accepted
]


@pytest.mark.parametrize("source, phrase", REJECTED)
def test_forbidden_constructs_are_rejected_with_a_message(source, phrase):
    if phrase is None:
        extract_function(source, "f", ALLOWED)
        return
    with pytest.raises(AllowListError) as info:
        extract_function(source, "f", ALLOWED)
    assert phrase in str(info.value)


def test_unparseable_and_deep_sources_are_answers_errors_not_crashes():
    for source in ("def f(x:\n", "x = " + "(" * 100_000, "def f(x):\n    return " + "[" * 3000 + "]" * 3000):
        with pytest.raises(AllowListError):
            extract_function(source, "f", ALLOWED)


def test_missing_function_says_what_to_do():
    with pytest.raises(AllowListError, match="no `def f"):
        extract_function('raise NotImplementedError("x: replace this line with your answer")', "f", ALLOWED)


HONEST = '''
STEPS = 3          # a literal constant the function uses


def helper(values):
    total = 0
    for v in values:
        total += v
    return total


def f(x, scale=2.0):
    """Docstrings and comments are fine."""
    import time
    max = 0                      # shadowing a builtin is not tampering
    sum = helper([1, 2])
    torch._dynamo.reset()
    counts = dict(torch._dynamo.utils.counters["inductor"])
    best = {}
    best["n"] = STEPS            # subscript stores on your own objects are fine
    squares = [i * i for i in range(STEPS) if i != 1]
    lookup = {k: v for k, v in zip("ab", (1, 2))}
    with torch.no_grad():
        y = torch.where(x > 0, x * scale, -x)
    try:
        start = time.perf_counter()
    except Exception as exc:
        raise RuntimeError(f"no clock: {exc}")
    inner = lambda t: t + 1
    return y, max, sum, squares, lookup, counts, inner(1), best
'''


def test_honest_code_passes_and_brings_its_helpers():
    source = extract_function(HONEST, "f", ALLOWED)
    assert "def helper" in source and "STEPS = 3" in source
    assert "def f(" in source


def test_unrelated_top_level_code_is_not_shipped():
    source = extract_function("import os\nos.system('x')\nUNUSED = 1\n" + body("return x"), "f", ALLOWED)
    assert "os" not in source and "UNUSED" not in source


def test_a_helper_is_checked_like_the_function():
    with pytest.raises(AllowListError, match="`helper`.*getattr"):
        extract_function("def helper(x):\n    return getattr(x, 'a')\n" + body("return helper(x)"), "f", ALLOWED)


def test_a_computed_top_level_value_is_checked_like_measured_code():
    with pytest.raises(AllowListError, match="`make_cases` is not available"):
        extract_function("CASES = make_cases()\n" + body("return CASES"), "f", ALLOWED)
    with pytest.raises(AllowListError, match="torch.os"):
        extract_function("SHELL = torch.os.system\n" + body("return SHELL"), "f", ALLOWED)
    with pytest.raises(AllowListError, match="`open` is not allowed"):
        extract_function("FILE = open('/etc/passwd')\n" + body("return FILE"), "f", ALLOWED)


def test_cell_level_constants_helpers_and_aliases_as_in_python():
    import torch
    cell = ("DTYPES = (torch.float32, torch.float64)\nSIZES = [n * 2 for n in range(3)]\nSCALE = 1.0\n"
            "def _impl(x):\n    return [x.to(d) * SCALE for d in DTYPES], SIZES\n"
            "SCALE = 2.0\n"            # the last assignment counts, as in Python
            "f = _impl\n")
    fn = load_checked(extract_function(cell, "f", ALLOWED), "f", ALLOWED, {"torch": torch})
    outs, sizes = fn(torch.ones(1))
    assert [o.dtype for o in outs] == [torch.float32, torch.float64] and outs[0].item() == 2.0
    assert sizes == [0, 2, 4]
    with pytest.raises(AllowListError, match="no `def f"):
        extract_function("f = 3\n", "f", ALLOWED)
    with pytest.raises(AllowListError, match="no `def f"):
        extract_function("def f(x):\n    return x\nf = None\n", "f", ALLOWED)


def test_from_import_of_an_allowed_module_is_like_import():
    import torch
    source = body("from time import perf_counter as clock", "t0 = clock()", "return clock() - t0 >= 0")
    assert load_checked(extract_function(source, "f", ALLOWED), "f", ALLOWED, {"torch": torch})(None) is True


def test_load_checked_runs_with_limited_builtins():
    import torch

    fn = load_checked(HONEST, "f", ALLOWED, {"torch": torch})
    out = fn(torch.tensor([1.0, -2.0]))
    assert out[1] == 0 and out[2] == 3
    probe = load_checked(body("return len(x)"), "f", ALLOWED, {"torch": torch})
    builtins = probe.__globals__["__builtins__"]
    assert "open" not in builtins and "getattr" not in builtins and "len" in builtins


def test_load_checked_rechecks_the_source():
    with pytest.raises(AllowListError):
        load_checked(body("return getattr(x, 'a')"), "f", ALLOWED, {})


@pytest.mark.parametrize("call", [
    "torch.ao.quantization.utils.getattr_from_fqn(x, 'grad_fn')",   # a getattr by string, found by a student
    "torch.fx.Tracer()",
    "torch.overrides.get_overridable_functions()",
    "torch.utils.checkpoint.checkpoint(abs, x)",
    "torch.library.Library('x', 'DEF')",
])
def test_torch_namespaces_that_reach_beyond_tensors_are_refused(call):
    source = f"def f(x):\n    return {call}\n"
    with pytest.raises(AllowListError, match="loads code, touches files or starts processes"):
        extract_function(source, "f", AllowList(provided=frozenset({"torch"})))


@pytest.mark.parametrize("cell", [
    # a long docstring is prose, not a constant
    'def f(x):\n    """' + "Why this works. " * 600 + '"""\n    return torch.relu(x)\n',
    "ZERO, ONE = 0.0, 1.0\n\ndef f(x):\n    return torch.where(x > ZERO, x, x * ONE)\n",
    "FALLBACK: float = 1.0\n\ndef f(x):\n    return x * FALLBACK\n",
    "from torch import where\n\ndef f(x):\n    return where(x > 0, x, -x)\n",
    "%time 1 + 1\n\ndef f(x):\n    return torch.relu(x)\n",
    # type hints from typing are prose too: not checked, not sent
    "from typing import Callable, Tuple\n\ndef f(x: 'T', g: Callable = None) -> Tuple[int]:\n"
    "    y: Tuple[int] = torch.relu(x)\n    return y\n",
])
def test_honest_cell_layouts_are_accepted_and_run(cell):
    import torch

    source = extract_function(cell, "f", AllowList(provided=frozenset({"torch"})))
    assert "Why this works" not in source
    fn = load_checked(source, "f", AllowList(provided=frozenset({"torch"})), {"torch": torch})
    assert fn(torch.tensor([-1.0, 2.0])).shape == (2,)


def test_an_import_of_another_module_is_still_refused():
    with pytest.raises(AllowListError):
        extract_function("from os import system\n\ndef f(x):\n    return system('true')\n", "f",
                         AllowList(provided=frozenset({"torch"})))


def test_a_character_that_cannot_be_encoded_is_named_with_its_line():
    # the adversarial student's mal09: a lone surrogate in an answer was reported as "nested too deeply"
    source = "def f(x):\n    return x\n# note \udc80\n"
    with pytest.raises(AllowListError, match=r"line 3 holds a character that cannot be encoded") as info:
        extract_function(source, "f", AllowList(provided=frozenset({"torch"})))
    assert "nested too deeply" not in str(info.value)


WITH_COPY = AllowList(provided=frozenset({"torch"}), imports=frozenset({"time", "copy"}))


@pytest.mark.parametrize("lines, phrase", [
    (("import copy", "return copy.copy(x)"), "`copy.copy` is not allowed: a shallow copy of a tensor shares"),
    (("import copy as c", "return c.copy(x)"), "`c.copy` is not allowed"),
    (("import copy", "shallow = copy", "return shallow.copy(x)"), "`shallow.copy` is not allowed"),
    (("from copy import copy", "return copy(x)"), "`from copy import copy` is not allowed"),
    (("from copy import copy as c", "return c(x)"), "`from copy import copy` is not allowed"),
    (("import copy", "return copy.deepcopy(x)"), None),            # a deep copy has memory of its own
    (("d = dict(a=1)", "return d.copy()"), None),                   # a dict's copy method is not copy.copy
])
def test_a_shallow_copy_that_shares_a_tensor_s_memory_is_refused(lines, phrase):
    if phrase is None:
        extract_function(body(*lines), "f", WITH_COPY)
        return
    with pytest.raises(AllowListError, match=re.escape(phrase)):
        extract_function(body(*lines), "f", WITH_COPY)
