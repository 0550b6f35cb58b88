"""VersionBoundary: stable fields a reader compares, volatile fields apart."""

import os
import platform

import torch
import torch._dynamo.config as dynamo_config

from compile_course.boundary import VersionBoundary


def test_stable_fields_name_the_build_and_the_settings():
    b = VersionBoundary(backend="inductor", mode="max-autotune", fullgraph=True, dynamic=False,
                        inputs="float32[8, 16]", diagnostics=["explain", "recompiles log"])
    stable = dict(b.stable())
    assert stable["torch"] == torch.__version__
    assert stable["torch"].split("+")[0] == "2.14.1"
    assert stable["backend"] == "inductor"
    assert stable["mode"] == "max-autotune"
    assert stable["fullgraph"] == "True"
    assert stable["dynamic"] == "False"
    assert stable["python"] == "3.11"
    assert stable["device"] == "cpu"
    assert stable["input contract"] == "float32[8, 16]"
    assert stable["diagnostics used"] == "explain, recompiles log"
    assert stable["recompile_limit"] == str(dynamo_config.recompile_limit)
    assert stable["default dtype"] == "float32"


def test_defaults():
    stable = dict(VersionBoundary().stable())
    assert (stable["backend"], stable["mode"], stable["fullgraph"], stable["dynamic"]) == ("eager", "None", "False", "None")
    assert stable["diagnostics used"] == "-"


def test_stable_fields_follow_the_config():
    with dynamo_config.patch(recompile_limit=3, automatic_dynamic_shapes=False):
        stable = dict(VersionBoundary().stable())
    assert stable["recompile_limit"] == "3"
    assert stable["automatic_dynamic_shapes"] == "False"


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


def test_str_is_the_stable_table():
    b = VersionBoundary(backend="aot_eager", dynamic=True)
    assert str(b) == b.stable_table()
    lines = str(b).splitlines()
    assert len(lines) == len(b.stable())
    width = max(len(k) for k, _ in b.stable())
    assert all(line[width:width + 2] == "  " for line in lines)  # values line up in one column
    assert lines[0].split()[0] == "torch"
    assert str(b) == str(VersionBoundary(backend="aot_eager", dynamic=True))


def test_volatile_table_reports_the_cache_dir(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/some/cache")
    assert "inductor cache dir  /some/cache" in VersionBoundary().volatile_table()
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert VersionBoundary().volatile_table().splitlines()[-1].endswith("(default)")
