"""Exact pins live in requirements.txt; environment.yml and pyproject agree with it."""

import re
from pathlib import Path

import yaml

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


def test_python_is_3_11_everywhere():
    conda = [d for d in environment()["dependencies"] if isinstance(d, str) and re.match(r"python\b", d)]
    assert conda == ["python=3.11"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    requires = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject, re.MULTILINE).group(1)
    assert requires == ">=3.11,<3.12"
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
