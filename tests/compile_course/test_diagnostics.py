"""explain / CompileWatch / recompile_log / call_without_recompile against real Dynamo.

Expected counts and reasons come from calling torch._dynamo.explain directly
in the test; the GB ids known for torch 2.14.1 are pinned in addition.
"""

import logging

import pytest
import torch
import torch.nn as nn

from compile_course.diagnostics import (
    CompileWatch,
    call_without_recompile,
    describe_exception,
    explain,
    first_line,
    gb_id,
    normalize_recompile_message,
    recompile_log,
)

TORCH_2_14_1 = torch.__version__.split("+")[0] == "2.14.1"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def with_print(x):
    y = x * 2
    print("inside")
    return y + 1


def with_item(x):
    s = x.sum()
    scale = s.item()
    return x * scale


def with_branch(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def no_break(x):
    return torch.sin(x) * 2 + 1


@pytest.mark.parametrize("fn, pinned_gb",
                         [(with_print, "GB0059"), (with_item, "GB0124"), (with_branch, None), (no_break, None)])
def test_explain_reports_what_dynamo_reports(fn, pinned_gb, capsys):
    x = torch.randn(4)
    report = explain(fn, x)
    torch._dynamo.reset()
    direct = torch._dynamo.explain(fn)(x)
    assert ((report.graph_count, report.break_count, report.op_count)
            == (direct.graph_count, direct.graph_break_count, direct.op_count))
    assert [b.gb for b in report.breaks] == [gb_id(b.reason) for b in direct.break_reasons]
    assert [b.reason for b in report.breaks] == [first_line(b.reason) for b in direct.break_reasons]
    assert [b.full for b in report.breaks] == [b.reason for b in direct.break_reasons]  # nothing dropped
    assert report.graph_count == len(direct.graphs) and report.break_count == report.graph_count - 1
    assert len(report.graphs) == report.graph_count
    if fn is no_break:
        assert (report.graph_count, report.break_count) == (1, 0)
    else:
        assert (report.graph_count, report.break_count) == (2, 1)
        assert report.breaks[0].where.startswith(fn.__name__ + ", line ")
    if pinned_gb and TORCH_2_14_1:
        assert report.breaks[0].gb == pinned_gb
    text = str(report)
    assert text.splitlines()[0] == (f"graphs: {report.graph_count}   graph breaks: {report.break_count}   "
                                    f"ops captured: {report.op_count}")
    assert __file__ not in text  # no file paths in what a notebook stores
    for reason in direct.break_reasons:  # every non-empty line of torch's reason is printed
        for line in reason.reason.splitlines():
            assert line.strip() in text
    if pinned_gb and TORCH_2_14_1:
        assert "Hint:" in text and f"/gb/{pinned_gb.lower()}.html" in text
    capsys.readouterr()


def test_show_torch_prints_torchs_own_explain_output(capsys):
    report = explain(with_print, torch.randn(3))
    capsys.readouterr()
    report.show_torch()
    out = capsys.readouterr().out
    for section in ("Graph Count: 2", "Graph Break Count: 1", "Break Reasons:", "Ops per Graph:", "Out Guards:"):
        assert section in out
    assert "Failed to trace builtin operator" in out


def first_op_is_a_break(x):
    print("before any tensor op")
    return x * 2


def test_explain_cannot_see_a_break_before_the_first_captured_op(capsys):
    # The limit the lessons teach: explain reports no break, the graph_breaks authority does.
    report = explain(first_op_is_a_break, torch.randn(3))
    assert (report.graph_count, report.break_count) == (1, 0)
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(first_op_is_a_break, backend="eager", fullgraph=True)(torch.randn(3))
    capsys.readouterr()


def test_show_graphs_prints_fx_code(capsys):
    explain(with_print, torch.randn(3)).show_graphs()
    out = capsys.readouterr().out
    assert out.count("--- graph ") == 2 and "def forward" in out


def test_fullgraph_on_data_dependent_branch_raises_gb0170():
    compiled = torch.compile(with_branch, backend="eager", fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported) as info:
        compiled(torch.randn(4))
    text = describe_exception(info.value)
    assert text.startswith("Unsupported")
    assert text == f"Unsupported [{gb_id(str(info.value))}]: {str(info.value).strip()}"  # torch's whole message
    if TORCH_2_14_1:
        assert text.startswith("Unsupported [GB0170]: Data-dependent branching")
        assert "Hint:" in text and "gb0170.html" in text


def test_gb_id_and_describe_exception_without_an_id():
    assert gb_id("see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html") == "GB0059"
    assert gb_id("no link here") == "-"
    assert describe_exception(ValueError("\n  bad value\nmore")) == "ValueError: bad value\nmore"


# ---------------------------------------------------------------- compile counts

def double_plus_one(a):
    return a * 2 + 1


def test_compile_watch_counts_recompiles(capfd):
    watch = CompileWatch(double_plus_one)
    watch(torch.randn(3))
    watch(torch.randn(3))                      # same input contract: reused
    watch(torch.randn(5))                      # new size: recompile (dim marked dynamic)
    watch(torch.randn(7))                      # third size: the dynamic graph serves it
    assert [new for _, new in watch.calls] == [1, 0, 1, 0]
    assert watch.frames == 2 and watch.log.count == 1
    assert watch.log.lines() == ["recompiling double_plus_one",
                                 "  variant 0 failed: tensor 'a' size mismatch at index 0. expected 3, actual 5"]
    assert "triggered by the following guard failure(s):" in str(watch.log)  # torch's record, whole
    watch(torch.randn(7, dtype=torch.float64))
    watch(torch.randn(7, requires_grad=True))
    assert [new for _, new in watch.calls][4:] == [1, 1]
    lines = watch.log.lines()
    assert "tensor 'a' dtype mismatch. expected Float, actual Double" in "\n".join(lines)
    assert "tensor 'a' requires_grad mismatch. expected requires_grad=0" in "\n".join(lines)
    history = watch.history().splitlines()
    assert history[0] == "(float32[3])                 new compilations: 1"
    assert history[-2] == "(float32[7], requires_grad)  new compilations: 1"
    assert history[-1] == "total compilations: 4   recompiles logged: 3"
    assert capfd.readouterr().err == ""


def test_automatic_dynamic_off_recompiles_every_size():
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        watch = CompileWatch(double_plus_one)
        for n in (3, 5, 7):
            watch(torch.randn(n))
    assert [new for _, new in watch.calls] == [1, 1, 1]


def test_module_train_eval_recompiles_with_the_training_guard(capfd):
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.1))
    watch = CompileWatch(model)
    x = torch.randn(2, 3)
    watch(x, label="train")
    model.eval()
    watch(x, label="eval")
    model.train()
    watch(x, label="train again")
    assert [new for _, new in watch.calls] == [1, 1, 0]
    assert watch.log.count == 1
    assert any("training == True" in line and "failed" in line for line in watch.log.lines())
    assert watch.history().splitlines()[1] == "eval         new compilations: 1"
    assert capfd.readouterr().err == ""


def test_normalize_recompile_message_keeps_each_guard_whole():
    message = (
        "Recompiling function scale in /tmp/ipykernel_123/456.py:3\n"
        "    triggered by the following guard failure(s):\n"
        "    - 2/1: L['x'].size()[0] == 5  # return x * 2  # /tmp/ipykernel_123/456.py:4 in scale\n"
        "    - 2/0: tensor 'x' dtype mismatch. expected Float, actual Double\n"
        "  File \"/tmp/ipykernel_123/456.py\", line 9, in <module>\n"
    )
    assert normalize_recompile_message(message) == [
        "recompiling scale",
        "  variant 1 failed: L['x'].size()[0] == 5  # return x * 2  # /tmp/ipykernel_123/456.py:4 in scale",
        "  variant 0 failed: tensor 'x' dtype mismatch. expected Float, actual Double",
    ]
    assert normalize_recompile_message("unrelated text\n") == []


def test_normalize_matches_a_real_recompile_record():
    with recompile_log() as log:
        f = torch.compile(double_plus_one, backend="eager")
        f(torch.randn(2))
        f(torch.randn(2, dtype=torch.float64))
    assert log.count == 1
    assert __file__ in log.messages[0]  # the raw record names this file...
    assert str(log) == log.messages[0].rstrip()  # ...and is printed as torch wrote it
    assert log.lines()[0] == "recompiling double_plus_one"
    assert __file__ not in "\n".join(log.lines())


def test_recompile_log_prints_nothing(capfd):
    from compile_course.quiet import set_quiet_logs

    # Control: with the recompiles artifact on and no recompile_log, torch prints the record.
    torch._logging.set_logs(recompiles=True)
    try:
        f = torch.compile(double_plus_one, backend="eager")
        f(torch.ones(2))
        f(torch.ones(2, dtype=torch.float64))
    finally:
        set_quiet_logs()
    assert "Recompiling function double_plus_one" in capfd.readouterr().err

    torch._dynamo.reset()
    logger = logging.getLogger("torch._dynamo.guards.__recompiles")
    propagate_before = logger.propagate
    with recompile_log() as log:
        f = torch.compile(double_plus_one, backend="eager")
        for dtype in (torch.float32, torch.float64, torch.float16):
            f(torch.ones(2, dtype=dtype))
    assert log.count == 2
    assert capfd.readouterr() == ("", "")
    assert logger.propagate == propagate_before
    with recompile_log() as empty:
        pass
    assert str(empty) == "no recompiles logged"


def test_call_without_recompile(capfd):
    f = torch.compile(double_plus_one, backend="eager")
    f(torch.ones(3))
    assert call_without_recompile(f, torch.zeros(3)) == "ok: reused a cached graph"
    text = call_without_recompile(f, torch.ones(3, dtype=torch.float64))
    lines = text.splitlines()
    assert lines[0].startswith("RuntimeError: Detected recompile when torch.compile stance is 'fail_on_recompile'")
    assert "function name: 'double_plus_one'" in lines[0]
    assert lines[1:] == ["    triggered by the following guard failure(s):",
                         "    - 0/0: tensor 'a' dtype mismatch. expected Float, actual Double"]
    # The stance is restored: an ordinary call may recompile again.
    f(torch.ones(3, dtype=torch.float64))
    assert call_without_recompile(f, torch.ones(3, dtype=torch.float64)) == "ok: reused a cached graph"
    assert capfd.readouterr().err == ""
