"""Exact pins live in requirements.txt; environment.yml and pyproject agree with it."""

import re
from pathlib import Path

import pytest
import yaml

from course_tools.interpreter import LOCK_TARGETS

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines() -> list[str]:
    lines = []
    for raw in (ROOT / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


def requirements() -> dict[str, str]:
    pins = {}
    for line in requirement_lines():
        match = PIN.match(line)
        assert match, f"requirements.txt: {line!r} is not an exact name==version pin"
        assert canonical(match.group(1)) not in pins, f"{line!r} is pinned twice"
        pins[canonical(match.group(1))] = match.group(2)
    return pins


def environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def pip_section() -> list[str]:
    sections = [d["pip"] for d in environment()["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(sections) == 1, "environment.yml needs exactly one pip section"
    return sections[0]


def test_every_requirement_is_an_exact_pin():
    assert requirements()


def test_environment_pip_section_equals_requirements_line_for_line():
    pins = [line for line in pip_section() if not line.startswith("-e ")]
    assert pins == requirement_lines()
    assert [line for line in pip_section() if line.startswith("-e ")] == ["-e ."]


def test_python_is_the_supported_range_everywhere():
    """conda's python is one minor of the range the set-up checks (CPython 3.11.2 to 3.13); pyproject states it."""
    from course_tools.interpreter import version_problem

    conda = [d for d in environment()["dependencies"] if isinstance(d, str) and re.match(r"python\b", d)]
    assert len(conda) == 1 and conda[0].startswith("python=3.")
    assert version_problem("CPython", (3, int(conda[0].split(".")[1]), 99)) is None, conda
    pyproject = (ROOT / "pyproject.toml").read_text()
    requires = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject, re.MULTILINE).group(1)
    assert requires == ">=3.11.2,<3.14"
    assert "pip" in environment()["dependencies"]


def test_torch_is_pinned_to_2_14_1():
    assert requirements()["torch"] == "2.14.1"


def pyproject_dependencies() -> list[str]:
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["dependencies"]


def test_pyproject_dependencies_are_unversioned_and_pinned_in_requirements():
    deps = pyproject_dependencies()
    assert deps, "pyproject lists what the package imports"
    pins = requirements()
    for dep in deps:
        assert re.fullmatch(r"[A-Za-z0-9._-]+", dep), f"{dep!r}: versions belong in requirements.txt only"
        assert canonical(dep) in pins, f"{dep} is imported by the package but not pinned in requirements.txt"


def test_test_tools_are_pinned():
    # `make test` runs pytest with xdist and nbval; a notebook kernel needs ipykernel.
    assert {"pytest", "pytest-xdist", "nbval", "ipykernel"} <= set(requirements())


def test_installed_versions_match_the_pins():
    from importlib.metadata import PackageNotFoundError, version

    mismatches = []
    for name, pinned in requirements().items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            mismatches.append(f"{name}: not installed")
            continue
        if installed.split("+")[0] != pinned:
            mismatches.append(f"{name}: installed {installed}, pinned {pinned}")
    assert mismatches == []


# ---------------------------------------------------------------- requirements.lock


def lock() -> dict[str, str]:
    from course_tools.lock import read_lock

    return read_lock(ROOT / "requirements.lock")


def installed_distributions() -> dict[str, str]:
    """``{canonical name: version}`` of every distribution installed in this venv's site-packages but pip and the
    course itself. Only site-packages: ``sys.path`` can hold more (setuptools puts its vendored packages,
    ``setuptools/_vendor/*.dist-info``, on it once anything has imported it), and those are not installed."""
    import sysconfig
    from importlib.metadata import distributions

    found = {}
    for dist in distributions(path=[sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]):
        name = canonical(dist.metadata["Name"])
        if name not in ("pip", "compile-course"):
            found[name] = dist.version
    return found


def test_every_requirement_pin_equals_the_lock():
    locked = lock()
    assert {name: locked.get(name) for name in requirements()} == requirements()


def test_the_lock_is_exact_pins_and_leaves_out_pip():
    locked = lock()
    assert len(locked) > len(requirements())   # dependencies too, not only the pins
    assert "pip" not in locked and "compile-course" not in locked


def locked_version_matches(installed: str, locked: str) -> bool:
    # a CPU-only torch from TORCH_INDEX is 2.14.1+cpu: PEP 440 lets ==2.14.1 match it, so does this
    return installed == locked or installed.split("+", 1)[0] == locked and "+" not in locked


def test_every_installed_package_is_locked_at_its_version():
    locked = lock()
    problems = [f"{name} {version}: " + (f"locked at {locked[name]}" if name in locked else "not in requirements.lock")
                for name, version in sorted(installed_distributions().items())
                if name not in locked or not locked_version_matches(version, locked[name])]
    # locked but not installed is allowed: a CPU-only torch needs none of the nvidia-* packages
    assert problems == [], "the venv and requirements.lock disagree (make lock, then make test): " + "; ".join(problems)


def test_the_version_rule_takes_a_local_label_only_where_the_lock_has_none():
    assert locked_version_matches("2.14.1+cpu", "2.14.1")
    assert locked_version_matches("2.14.1", "2.14.1")
    assert not locked_version_matches("2.14.0+cpu", "2.14.1")
    assert not locked_version_matches("2.14.1+cu130", "2.14.1+cpu")
    from packaging.specifiers import SpecifierSet

    assert "2.14.1+cpu" in SpecifierSet("==2.14.1")   # what pip applies to the constraint torch==2.14.1


def test_the_set_up_installs_with_the_lock_as_constraints():
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "requirements.lock" in rule.splitlines()[0]     # a new lock re-runs the set-up
    assert "-r requirements.txt -c requirements.lock" in rule
    assert "\nlock:" in makefile


def test_the_drift_venv_takes_the_lock_without_the_torch_family():
    from course_tools.lock import without_torch_family

    text = (ROOT / "requirements.lock").read_text()
    kept = {line.split("==")[0] for line in without_torch_family(text).splitlines() if "==" in line}
    assert not {n for n in kept if n in ("torch", "triton") or n.startswith(("nvidia-", "cuda-"))}
    dropped = set(lock()) - {canonical(n) for n in kept}
    assert "torch" in dropped and "triton" in dropped and "sympy" not in dropped and "jinja2" not in dropped


def test_the_lock_is_as_make_lock_writes_it():
    from course_tools.lock import parse, render

    text = (ROOT / "requirements.lock").read_text()
    assert text == render(parse(text)), "requirements.lock was edited by hand: regenerate it with make lock"
    assert parse("a==1\n# note\n\nB_c.d==2.0+cpu  # why\n") == {"a": "1", "b-c-d": "2.0+cpu"}
    for bad in ("a>=1\n", "a==1\nA==2\n", "-e .\n"):
        with pytest.raises(ValueError):
            parse(bad)


def test_the_venv_has_the_set_ups_pip():
    """Every venv installs with one pip, whatever its Python brought (the Makefile's PIP_VERSION)."""
    from importlib.metadata import version

    makefile = (ROOT / "Makefile").read_text()
    pinned = re.search(r"^PIP_VERSION := (\S+)$", makefile, re.MULTILINE).group(1)
    assert version("pip") == pinned, "the venv's pip is not the set-up's: make clean-venv, then make test"


@pytest.fixture(scope="module")
def resolved() -> dict:
    """pip's answer for every supported Python, resolved at once or taken from ~/.cache/compile-course/ when
    nothing it depends on has changed (course_tools.lock_check); printed: how many came from the cache."""
    from course_tools.lock_check import resolve_each

    return resolve_each(LOCK_TARGETS, requirements=ROOT / "requirements.txt", lock=ROOT / "requirements.lock",
                        say=print)


@pytest.mark.parametrize("target", LOCK_TARGETS)
def test_the_lock_serves_every_supported_python(target, resolved):
    """pip's resolver for each supported Python (the oldest release of 3.11, 3.12, 3.13; metadata only, wheels
    only, nothing installed) finds requirements.txt installable under the lock, every package it picks locked at
    that version. A package whose locked version needs a newer Python (soupsieve 4.1.3 wants 3.11.5) fails here."""
    found = resolved[target]
    if isinstance(found, Exception):
        raise found                                     # pip's own words for why it cannot
    locked = lock()
    assert found, "pip's report installs nothing"
    assert {name: version for name, version in found.items() if locked.get(name) != version} == {}


# ---------------------------------------------------------------- the resolver's cache (no pip)

def fake_report(pins: dict[str, str]) -> dict:
    return {"install": [{"metadata": {"name": name, "version": version}} for name, version in pins.items()]}


def test_each_python_resolves_at_once_and_a_kept_answer_is_reused(tmp_path, monkeypatch):
    """Three targets meet at a barrier only if their pips run at the same time; a second run asks pip nothing."""
    import threading

    import course_tools.lock_check
    from course_tools.lock_check import resolve_each

    monkeypatch.setattr(course_tools.lock_check, "pip_facts", lambda python: "pip 26.3")
    (tmp_path / "req.txt").write_text("a==1\n")
    (tmp_path / "lock.txt").write_text("a==1\nb==2\n")
    together = threading.Barrier(3, timeout=30)
    asked = []

    def run(target, requirements, lock, python):
        asked.append(target)
        together.wait()                                 # BrokenBarrierError if they ran one after another
        return fake_report({"a": "1", "b": "2", "pip": "26.3"})

    args = dict(requirements=tmp_path / "req.txt", lock=tmp_path / "lock.txt", cache=tmp_path / "cache")
    first = resolve_each(("3.11.2", "3.12.0", "3.13.0"), run=run, **args)
    assert sorted(asked) == ["3.11.2", "3.12.0", "3.13.0"]
    assert first["3.12.0"] == {"a": "1", "b": "2"}      # pip itself is not locked
    asked.clear()
    again = resolve_each(("3.11.2", "3.12.0", "3.13.0"), run=lambda *a: pytest.fail("pip ran again"), **args)
    assert again == first and asked == []


def test_a_changed_lock_an_old_answer_or_a_failure_makes_pip_run_again(tmp_path, monkeypatch):
    import os

    import course_tools.lock_check
    from course_tools.errors import ResolveError
    from course_tools.lock_check import MAX_AGE_DAYS, resolve_each

    monkeypatch.setattr(course_tools.lock_check, "pip_facts", lambda python: "pip 26.3")
    (tmp_path / "req.txt").write_text("a==1\n")
    lock_file = tmp_path / "lock.txt"
    lock_file.write_text("a==1\n")
    asked = []

    def run(target, requirements, lock, python):
        asked.append(lock.read_text())
        return fake_report(dict(line.split("==") for line in lock.read_text().split()))

    args = dict(targets=("3.12.0",), requirements=tmp_path / "req.txt", lock=lock_file, cache=tmp_path / "cache",
                run=run)
    resolve_each(**args)
    lock_file.write_text("a==1\nb==3\n")
    assert resolve_each(**args) == {"3.12.0": {"a": "1", "b": "3"}}   # the new lock's answer, not the kept one
    assert len(asked) == 2
    for kept in (tmp_path / "cache").iterdir():                      # every answer older than the limit
        old = kept.stat().st_mtime - MAX_AGE_DAYS * 86400 - 60
        os.utime(kept, (old, old))
    resolve_each(**args)
    assert len(asked) == 3

    def refuse(target, requirements, lock, python):
        asked.append("refused")
        raise ResolveError(target, "soupsieve 4.1.3 requires Python >=3.11.5")

    lock_file.write_text("a==1\nsoupsieve==4.1.3\n")
    for _ in range(2):                                               # a failure is never kept
        found = resolve_each(**{**args, "run": refuse})
        assert isinstance(found["3.12.0"], ResolveError) and "3.11.5" in str(found["3.12.0"])
    assert asked[-2:] == ["refused", "refused"]
