"""Measured code calls ``torch.compile`` with a backend's name and no ``options`` (``harness.child.compile_guarded``).

A function backend is handed the torch.fx graph: its nodes' targets are pasted into Python source that
``recompile()`` execs with the real builtins (the hostile corpus ran ``__import__`` and ``open`` that way from
code the allow-list had passed). Inductor's ``options`` name the C++ compiler it runs (``cpp.cxx``).
"""

from __future__ import annotations

import pytest
import torch

from course_grader.harness.allowlist.extract import load_checked
from course_grader.harness.allowlist.rules import AllowList
from course_grader.harness.child import compile_guarded

ALLOWED = AllowList(provided=frozenset({"torch"}))
HELPED = AllowList(provided=frozenset({"torch", "counted"}))


def counted(fn, x, backend="eager"):
    """A setup cell's helper (ex03's new_compilations): torch's counter around a backend."""
    from torch._dynamo.testing import CompileCounterWithBackend

    return torch.compile(fn, backend=CompileCounterWithBackend(backend))(x)

FUNCTION_BACKEND = '''
def f(x):
    def grab(gm, inputs):
        return gm
    return torch.compile(lambda t: t + 1, backend=grab)(x)
'''
AS_DECORATOR = '''
def f(x):
    def grab(gm, inputs):
        return gm
    return torch.compile(backend=grab)(lambda t: t + 1)(x)
'''
MODULE_COMPILE = '''
def f(x):
    def grab(gm, inputs):
        return gm
    m = torch.nn.Linear(3, 3)
    m.compile(backend=grab)
    return m(x)
'''
COMPILER_OPTIONS = '''
def f(x):
    return torch.compile(lambda t: t.sin(), options={"cpp.cxx": "/bin/false"})(x)
'''
BUILTIN_METHOD = '''
def f(x):
    box = []
    torch.compile(lambda t: t + 1, backend=box.append)
    return x
'''
THROUGH_A_HELPER = '''
def f(x):
    def grab(gm, inputs):
        return gm
    return counted(lambda t: t + 1, x, grab)
'''
HELPER_OWN_COUNTER = '''
def f(x):
    return counted(lambda t: t + 1, x)
'''
NAMED_BACKEND = '''
def f(x):
    return torch.compile(lambda t: t + 1, backend="eager", fullgraph=True)(x)
'''


@pytest.mark.parametrize("source, phrase", [(FUNCTION_BACKEND, "not a function"), (AS_DECORATOR, "not a function"),
                                            (MODULE_COMPILE, "not a function"), (COMPILER_OPTIONS, "options="),
                                            (BUILTIN_METHOD, "not a function"), (THROUGH_A_HELPER, "not a function")])
def test_measured_code_may_not_hand_torch_compile_a_function_or_options(source, phrase):
    fn = load_checked(source, "f", HELPED, {"torch": torch, "counted": counted})
    with compile_guarded(), pytest.raises(TypeError, match=phrase):
        fn(torch.ones(3))
    torch._dynamo.reset()


def test_a_backend_name_and_the_graders_own_function_backends_still_compile():
    fn = load_checked(NAMED_BACKEND, "f", ALLOWED, {"torch": torch})
    helped = load_checked(HELPER_OWN_COUNTER, "f", HELPED, {"torch": torch, "counted": counted})
    seen = []

    def recording(gm, inputs):   # the grader's own (primitives.compile_run): not measured code
        seen.append(gm)
        return gm

    with compile_guarded():
        assert torch.equal(fn(torch.ones(3)), torch.full((3,), 2.0))
        assert torch.equal(helped(torch.ones(3)), torch.full((3,), 2.0))   # the course's counter, "eager" inside
        assert torch.equal(torch.compile(lambda t: t * 2, backend=recording)(torch.ones(2)), torch.full((2,), 2.0))
        assert torch.compile.__module__ == "torch"    # the allow-list's re-check still resolves torch.compile
    assert seen and torch.compile.__name__ == "compile" and not hasattr(torch.compile, "__wrapped__")
    torch._dynamo.reset()
