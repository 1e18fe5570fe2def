"""Dependencies are pinned in one place (pyproject.toml); environment.yml mirrors them exactly."""

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def pyproject_pins() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        pins += [p for p in extra if not p.startswith("resispec")]
    return set(pins)


def conda_pins() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml must have exactly one pip section"
    return {p for p in pip_sections[0] if not p.startswith("-e")}


def test_every_dependency_is_pinned_exactly():
    loose = sorted(p for p in pyproject_pins() if "==" not in p)
    assert not loose, f"unpinned dependencies in pyproject.toml: {loose}"


def test_torch_is_the_cpu_wheel_on_disk():
    assert "torch==2.13.0" in pyproject_pins()


def test_environment_yml_mirrors_pyproject():
    ours, theirs = pyproject_pins(), conda_pins()
    assert ours == theirs, (
        f"only in pyproject.toml: {sorted(ours - theirs)}; only in environment.yml: {sorted(theirs - ours)}"
    )
