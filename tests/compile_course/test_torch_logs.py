"""torch_logs(): torch's own log lines, on stdout, then the quiet policy again."""

import sys

import torch

from compile_course import torch_logs


def with_print(x):
    y = x * 2
    print("side effect")
    return y + 1


def double(x):
    return x * 2


def test_graph_break_and_recompile_lines_reach_stdout_unfiltered(capfd):
    torch._dynamo.reset()
    compiled = torch.compile(with_print, backend="eager")
    with torch_logs(graph_breaks=True, recompiles=True):
        compiled(torch.ones(3))
        compiled(torch.ones(3, dtype=torch.float64))
    out, err = capfd.readouterr()
    assert err == ""
    assert "[__graph_breaks] Graph break in user code" in out
    assert "gb/gb0059.html" in out                      # the link to the GB page
    assert "Hint: If you are attempting to call a logging function" in out
    assert "[__recompiles] Recompiling function with_print" in out
    assert "tensor 'x' dtype mismatch. expected Float, actual Double" in out
    torch._dynamo.reset()


def test_guard_dump_and_the_quiet_policy_afterwards(capfd):
    torch._dynamo.reset()
    with torch_logs(guards=True):
        torch.compile(double, backend="eager")(torch.ones(2))
    out, err = capfd.readouterr()
    assert err == "" and "TREE_GUARD_MANAGER" in out and "TENSOR_MATCH" in out
    # After the block: nothing on stdout or stderr, for breaks or recompiles.
    torch._dynamo.reset()
    compiled = torch.compile(with_print, backend="eager")
    compiled(torch.ones(3))
    compiled(torch.ones(3, dtype=torch.float64))
    out, err = capfd.readouterr()
    assert err == "" and "__graph_breaks" not in out and "__recompiles" not in out
    torch._dynamo.reset()


def test_stderr_is_restored_even_on_error():
    before = sys.stderr
    try:
        with torch_logs():
            raise ValueError("boom")
    except ValueError:
        pass
    assert sys.stderr is before


def test_torch_warnings_show_inside_the_block_only(capfd):
    # recompile_limit's warning is logged at torch's default WARNING level: shown inside, quiet outside.
    def hit_limit():
        torch._dynamo.reset()
        compiled = torch.compile(double, backend="eager")
        with torch._dynamo.config.patch(recompile_limit=1):
            for dtype in (torch.float32, torch.float64):
                compiled(torch.ones(2, dtype=dtype))

    with torch_logs(recompiles=True):
        hit_limit()
    out, err = capfd.readouterr()
    assert err == "" and "hit config.recompile_limit (1)" in out
    hit_limit()
    assert capfd.readouterr() == ("", "")
    torch._dynamo.reset()
