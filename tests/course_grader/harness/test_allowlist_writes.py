"""Writes into state measured code did not build (harness/allowlist/writes.py).

A subscript store, an augmented store or a mutating method on anything reached from a module
(``torch._dynamo.utils.counters``), from the exercise's provided objects, or from a local name, cell
constant or helper that may hold one, is refused with its line; what the function builds itself and its
arguments stay its own. Found by an adversarial student (mal06): ex05's cache test reads inductor's
counters, which the answer rewrote by subscript.
"""

from __future__ import annotations

import pytest

from course_grader.errors import AllowListError
from course_grader.harness.allowlist.extract import extract_function, load_checked
from course_grader.harness.allowlist.rules import AllowList

EX05 = AllowList(provided=frozenset({"torch", "time", "X", "fused"}), imports=frozenset({"time"}),
                 dotted=frozenset({"torch._dynamo.reset", "torch._dynamo.utils.counters"}))

COUNTERS = "torch._dynamo.utils.counters"
WRITES = [
    # straight into the module's object, by subscript or augmented subscript
    f"def f(x):\n    {COUNTERS}['inductor']['fxgraph_cache_hit'] = 1\n",
    f"def f(x):\n    {COUNTERS}['inductor']['fxgraph_cache_hit'] += 1\n",
    # through local aliases, one or two deep, and an item of a copy
    f"def f(x):\n    c = {COUNTERS}\n    c['x']['y'] += 1\n",
    f"def f(x):\n    c = {COUNTERS}['inductor']\n    d = c\n    d['fxgraph_cache_miss'] = 0\n",
    f"def f(x):\n    groups = list({COUNTERS}.values())\n    groups[0]['x'] = 1\n",
    f"def f(x):\n    for group in {COUNTERS}.values():\n        group['x'] = 1\n",
    f"def f(x):\n    g = {COUNTERS}.get('inductor')\n    g['x'] = 1\n",
    f"def f(x):\n    a, b = {COUNTERS}['inductor'], 1\n    a['x'] = b\n",
    f"def f(x):\n    with {COUNTERS}['inductor'] as c:\n        pass\n    c['x'] = 1\n",
    f"def f(x):\n    for {COUNTERS}['inductor']['x'] in range(3):\n        pass\n",
    # an augmented assignment changes a dict, a Counter or a tensor in place
    f"def f(x):\n    c = {COUNTERS}['inductor']\n    c |= {{'fxgraph_cache_hit': 9}}\n",
    f"def f(x):\n    c = {COUNTERS}['inductor']\n    c += {{'fxgraph_cache_hit': 9}}\n",
    "def f(x):\n    t = X\n    t += 1.0\n",
    # mutating methods, bound, unbound or kept for later
    f"def f(x):\n    {COUNTERS}['inductor'].update(fxgraph_cache_hit=5)\n",
    f"def f(x):\n    {COUNTERS}.clear()\n",
    f"def f(x):\n    {COUNTERS}['inductor'].pop('fxgraph_cache_miss')\n",
    f"def f(x):\n    {COUNTERS}.setdefault('adv', {{}})\n",
    f"def f(x):\n    c = {COUNTERS}['inductor']\n    bump = c.update\n    bump(x=1)\n",
    f"def f(x):\n    dict.update({COUNTERS}['inductor'], fxgraph_cache_hit=5)\n",
    f"def f(x):\n    list(map(dict.clear, {COUNTERS}.values()))\n",
    # handed to the function's own code: a nested def, a lambda, a default, a cell helper
    f"def f(x):\n    def bump(d):\n        d['x'] += 1\n    bump({COUNTERS}['inductor'])\n",
    f"def f(x):\n    list(map(lambda d: d.clear(), {COUNTERS}.values()))\n",
    f"def f(x, c={COUNTERS}):\n    c['x']['y'] = 1\n",
    f"def f(x):\n    def get():\n        return {COUNTERS}['inductor']\n    get()['x'] = 1\n",
    f"def bump(d):\n    d['x'] += 1\n\n\ndef f(x):\n    bump({COUNTERS}['inductor'])\n",
    f"def get():\n    return {COUNTERS}['inductor']\n\n\ndef f(x):\n    c = get()\n    c['x'] = 1\n",
    f"C = {COUNTERS}\n\n\ndef f(x):\n    C['inductor']['x'] = 1\n",
    # the exercise's own objects are not the function's either
    "def f(x):\n    X[0] = 1.0\n",
    "def f(x):\n    X.add_(1.0)\n",
    "def f(x):\n    torch.Tensor.add_(X, 1.0)\n",
]


@pytest.mark.parametrize("source", WRITES)
def test_a_write_into_state_the_function_did_not_build_is_refused_with_its_line(source):
    with pytest.raises(AllowListError) as info:
        extract_function(source, "f", EX05)
    text = str(info.value)
    assert "line " in text and "measured code may change only objects it built itself" in text \
        or "only called on an object of your own" in text or "change in place; work on a copy" in text, text


def test_the_message_names_the_line_and_the_object():
    source = f"def f(x):\n    n = 1\n    {COUNTERS}['inductor']['fxgraph_cache_hit'] = n\n"
    with pytest.raises(AllowListError, match=r"line 3: writing into `torch\._dynamo\.utils\.counters\['inductor'\]"):
        extract_function(source, "f", EX05)


def test_del_of_an_item_stays_refused():
    with pytest.raises(AllowListError, match="`del`"):
        extract_function(f"def f(x):\n    del {COUNTERS}['inductor']\n", "f", EX05)


OWN = [
    # in-place indexing and methods on what the function built, or was given
    "def f(x):\n    y = torch.zeros(3)\n    y[0] = 1.0\n    y.add_(1.0)\n    return y\n",
    "def f(x):\n    x[0] = 1.0\n    x.mul_(2.0)\n    return x\n",
    "def f(x):\n    y = x.clone()\n    y[1:] = 0.0\n    return y\n",
    "def f(x):\n    z = X.clone()\n    z[0] = 2.0\n    return z\n",
    "def f(x):\n    out = []\n    seen = {}\n    for i in range(3):\n        out.append(i)\n"
    "        seen[i] = i\n    out.sort()\n    return out, seen\n",
    # the honest way to read the counters: copies, then reading
    f"def f(x):\n    before = dict({COUNTERS}['inductor'])\n    before['note'] = 0\n"
    f"    after = {COUNTERS}['inductor']\n    return after.get('fxgraph_cache_hit', 0) > before.get('x', 0)\n",
    f"def counts():\n    c = {COUNTERS}['inductor']\n    return c['fxgraph_cache_miss'], c['fxgraph_cache_hit']\n\n\n"
    "def f(x):\n    times = []\n    times.append(counts())\n    return times\n",
    "def f(x):\n    return torch.Tensor.add(x, 1), torch.cat([x, x])\n",
    "def f(x):\n    x += 1.0\n    total = 0\n    total += 1\n"
    f"    n = int({COUNTERS}['inductor']['fxgraph_cache_hit'])\n    n += 1\n    return x, n\n",
]


@pytest.mark.parametrize("source", OWN)
def test_what_the_function_built_or_was_given_stays_its_own(source):
    extract_function(source, "f", EX05)


def test_an_own_tensor_is_changed_in_the_measuring_process_too():
    import torch
    fn = load_checked(OWN[1], "f", EX05, {"torch": torch})
    assert fn(torch.zeros(2)).tolist() == [2.0, 0.0]


def test_a_long_chain_of_aliases_in_reverse_order_is_followed_to_its_end():
    # the first version stopped after 50 passes over the function, so 60 aliases written backwards in a loop
    # (each pass learns one more) carried the counters past the check
    chain = [f"        a{i} = a{i + 1}" for i in range(300)]
    source = "\n".join(["def f(x):", "    while True:", *chain, f"        a300 = {COUNTERS}",
                        "        a0['inductor']['fxgraph_cache_hit'] = 1", "        break"]) + "\n"
    with pytest.raises(AllowListError, match="line 304: writing into"):
        extract_function(source, "f", EX05)
