"""Attribute chains rooted at a provided module are resolved over the real attributes.

``torch.os``, ``torch.builtins``, ``torch.sys``, ``torch.inspect`` and the like are other
modules reached through torch; they are rejected wherever they appear. Honest torch use passes.
"""

from __future__ import annotations

import pytest

from course_grader.errors import AllowListError
from course_grader.harness.allowlist.extract import extract_function, load_checked
from course_grader.harness.allowlist.rules import AllowList

ALLOWED = AllowList(provided=frozenset({"torch", "time"}), imports=frozenset({"time"}),
                    dotted=frozenset({"torch._dynamo.reset", "torch._dynamo.utils.counters"}))
EX04 = AllowList(provided=frozenset({"torch", "nn", "Case", "compare", "copy"}))

ESCAPES = [
    "torch.os.system('true')",
    "torch.builtins.open('/etc/passwd')",
    "torch.builtins.setattr(torch, 'where', None)",
    "torch.sys.modules['os']",
    "torch.inspect.getsource(torch.where)",
    "torch.nn.modules.module.functools.reduce",
    "torch.nn.modules.module.warnings.warn('x')",
    "torch.functional.itertools",
    "torch.nn.modules.module.OrderedDict()",
    "torch.no_such_thing",
    "torch.hub.download_url_to_file('http://x', 'y')",
    "torch.load('model.pt', weights_only=False)",
    "torch.utils.cpp_extension.load_inline('m', '')",
    # compiled code loaded from bytes or a file, a function as the default backend, files (the hostile corpus)
    "torch.compiler.load_cache_artifacts(b'')",
    "torch.compiler.load_compiled_function(x)",
    "torch.compiler.set_default_backend(len)",
    "torch.compiler.config",
    "torch.from_file('/etc/passwd', False, 10)",
    "torch.PyTorchFileWriter('f')",
    # a denied part reached through another module's attribute: a module is known by its own name
    "torch.nn.functional.torch.hub.load('a', 'b')",
    "torch.nn.modules.module.torch.save(x, 'p')",
    "torch.functional.torch.fx.symbolic_trace(x)",
    "torch.nn.parallel.distributed.dist.init_process_group('gloo')",
    "torch.autograd.functional.fwAD.make_dual(x, x)",
]


def places(expr: str) -> list[str]:
    """The same expression in a body, a default argument, a lambda, a nested function, a decorator."""
    return [
        f"def f(x):\n    return {expr}\n",
        f"def f(x, y={expr}):\n    return x\n",
        f"def f(x):\n    g = lambda: {expr}\n    return g\n",
        f"def f(x):\n    def g():\n        return {expr}\n    return g\n",
        f"def f(x):\n    @{expr}\n    def g():\n        pass\n    return g\n",
        f"def helper():\n    return {expr}\n\ndef f(x):\n    return helper()\n",
    ]


@pytest.mark.parametrize("expr", ESCAPES)
def test_chains_reaching_another_module_are_rejected_everywhere(expr):
    for source in places(expr):
        with pytest.raises(AllowListError):
            extract_function(source, "f", ALLOWED)


@pytest.mark.parametrize("source", [
    "def f(x):\n    t = torch\n    return t.os.system('true')\n",
    "def f(x):\n    m = torch.nn.modules.module\n    return m.sys.modules\n",
    "def f(x):\n    return [torch][0].os\n",
    "def f(x, m=torch):\n    return m.os\n",
    "def f(x):\n    return g(torch)\n\ndef g(m):\n    return m.os\n",
    "def f(x):\n    import time as t\n    return t.sleep.__self__\n",
    "def f(x):\n    t = torch.nn.functional.torch\n    return t.load('p')\n",
    "def f(x):\n    d = torch.nn.parallel.distributed.dist\n    return d.init_process_group('gloo')\n",
])
def test_modules_cannot_be_smuggled_into_other_names(source):
    with pytest.raises(AllowListError):
        extract_function(source, "f", ALLOWED)


def test_nn_root_is_torch_nn():
    with pytest.raises(AllowListError):
        extract_function("def f(x):\n    return nn.modules.module.torch.os\n", "f", EX04)
    extract_function("def f(x):\n    return nn.Linear(2, 2), nn.functional.relu(x), copy.deepcopy(x)\n", "f", EX04)


HONEST = [
    "def f(x):\n    return torch.where(x > 0, x, torch.zeros_like(x))\n",
    "def f(x):\n    return torch.nn.functional.relu(x).to(torch.float64)\n",
    "def f(x):\n    F = torch.nn.functional\n    return F.relu(x) * torch.pi\n",
    "def f(x):\n    torch._dynamo.reset()\n    return torch._dynamo.utils.counters['stats']\n",
    "def f(x):\n    with torch.no_grad():\n        return isinstance(x, torch.Tensor) and torch.allclose(x, x)\n",
    "def f(x):\n    import time\n    t0 = time.perf_counter()\n"
    "    return torch.compile(torch.sin, backend='eager')(x), time.perf_counter() - t0\n",
    "def f(x):\n    return torch.Tensor.add(x, 1), torch.float64.is_floating_point, torch.testing.assert_close\n",
    "def f(x):\n    t = torch.nn.functional.torch\n    return t.sin(x)\n",
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_torch_use_passes(source):
    extract_function(source, "f", ALLOWED)


def test_the_measuring_process_rechecks():
    import torch
    with pytest.raises(AllowListError):
        load_checked("def f(x):\n    return torch.os.getcwd()\n", "f", ALLOWED, {"torch": torch})
    fn = load_checked(HONEST[0], "f", ALLOWED, {"torch": torch})
    assert fn(torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
