"""VersionBoundary: stable fields a reader compares, volatile fields apart."""

import os
import platform

import torch
import torch._dynamo.config as dynamo_config

from compile_course.boundary import VersionBoundary

PYTHON = ".".join(platform.python_version_tuple()[:2])   # the venv's own minor: 3.11, 3.12 or 3.13


def test_stable_fields_name_the_build_and_the_settings():
    b = VersionBoundary(backend="inductor", mode="max-autotune", fullgraph=True, dynamic=False,
                        inputs="float32[8, 16]", diagnostics=["explain", "recompiles log"])
    stable = dict(b.stable())
    assert stable["torch"] == torch.__version__.split("+")[0] == "2.14.1"
    assert stable["backend"] == "inductor"
    assert stable["mode"] == "max-autotune"
    assert stable["fullgraph"] == "True"
    assert stable["dynamic"] == "False"
    assert stable["python"] == PYTHON
    assert stable["device"] == "cpu"
    assert stable["input contract"] == "float32[8, 16]"
    assert stable["diagnostics used"] == "explain, recompiles log"
    assert stable["recompile_limit"] == str(dynamo_config.recompile_limit)
    assert stable["default dtype"] == "float32"


def test_defaults():
    stable = dict(VersionBoundary().stable())
    assert ((stable["backend"], stable["mode"], stable["fullgraph"], stable["dynamic"])
            == ("eager", "None", "False", "None"))
    assert stable["diagnostics used"] == "-"


def test_stable_fields_follow_the_config():
    with dynamo_config.patch(recompile_limit=3, automatic_dynamic_shapes=False):
        stable = dict(VersionBoundary().stable())
    assert stable["recompile_limit"] == "3"
    assert stable["automatic_dynamic_shapes"] == "False"


def test_scalar_capture_reports_what_fullgraph_turns_on():
    with dynamo_config.patch(capture_scalar_outputs=False):
        assert dict(VersionBoundary(fullgraph=False).stable())["capture_scalar_outputs"] == "False"
        assert dict(VersionBoundary(fullgraph=True).stable())["capture_scalar_outputs"].startswith("True")
    with dynamo_config.patch(capture_scalar_outputs=True):
        assert dict(VersionBoundary(fullgraph=False).stable())["capture_scalar_outputs"] == "True"


def test_wheel_and_cuda_fields_stay_out_of_the_compared_table(monkeypatch):
    """A student on the +cpu wheel must see the same compared text as one on +cu130."""
    tables = []
    for wheel, cuda in (("2.14.1+cu130", "13.0"), ("2.14.1+cpu", None)):
        monkeypatch.setattr(torch, "__version__", wheel)
        monkeypatch.setattr(torch.version, "cuda", cuda)
        b = VersionBoundary(backend="eager")
        tables.append(b.stable_table())
        assert dict(b.volatile())["torch wheel"] == wheel
    assert tables[0] == tables[1]
    assert "+" not in tables[0] and "CUDA" not in tables[0]


def test_volatile_fields_are_separate():
    b = VersionBoundary()
    stable, volatile = dict(b.stable()), dict(b.volatile())
    assert not set(stable) & set(volatile)
    assert volatile["python (full)"] == platform.python_version()
    assert volatile["cpu count"] == str(os.cpu_count())
    # Nothing machine-specific leaks into the compared table.
    table = b.stable_table()
    for value in (platform.platform(), platform.python_version()):
        assert value not in table
    assert b.as_dict() == {**stable, **volatile}


def test_str_is_the_compact_stable_table():
    b = VersionBoundary(backend="aot_eager", dynamic=True, inputs="float32[8]", diagnostics=["explain"])
    assert str(b) == b.stable_table()
    lines = str(b).splitlines()
    assert len(lines) < len(b.stable())  # grouped, not one line a field
    assert lines[0].split() == ["torch", "2.14.1", "|", "python", PYTHON, "|", "cpu"]
    assert "backend=aot_eager" in lines[1] and "dynamic=True" in lines[1]
    assert lines[-2:] == ["inputs    float32[8]", "evidence  explain"]
    for key, value in b.stable():  # every stable value is in the table
        assert value in str(b), key
    same = VersionBoundary(backend="aot_eager", dynamic=True, inputs="float32[8]", diagnostics=["explain"])
    assert str(b) == str(same)


def test_volatile_table_reports_the_cache_dir(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/some/cache")
    assert dict(VersionBoundary().volatile())["inductor cache dir"] == "/some/cache"
    assert VersionBoundary().volatile_table().splitlines()[-1].endswith("/some/cache")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert VersionBoundary().volatile_table().splitlines()[-1].endswith("(default)")
