"""The command line lists its subcommands; workflow scripts are thin calls into it."""

import subprocess
import sys
from pathlib import Path

from resispec.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_every_subcommand():
    out = subprocess.run(
        [sys.executable, "-m", "resispec", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name in COMMANDS:
        assert name in out, f"`resispec --help` does not list {name}"


def test_every_command_module_exists():
    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices
    assert set(choices) == set(COMMANDS)


def test_workflow_scripts_are_thin():
    for script in (ROOT / "workflow" / "scripts").glob("*.py"):
        code = [line for line in script.read_text().splitlines() if line.strip() and not line.startswith("#")]
        assert len(code) <= 3, f"{script.name} holds logic; move it into src/resispec"
        assert any("run_step(" in line for line in code), script.name


def test_every_rule_is_named_after_the_command_its_script_runs():
    """rule NAME runs workflow/scripts/NAME.py, which runs the step module of `resispec NAME` (dashes for
    underscores) itself: rule -> script -> step, two hops."""
    import re

    rules = {}
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for name, body in re.findall(r"^rule (\w+):\n((?:    .*\n|\n)*)", path.read_text(), re.MULTILINE):
            if script := re.search(r'script:\s+"\.\./scripts/(\w+)\.py"', body):
                rules[name] = script.group(1)
    assert rules and all(name == script for name, script in rules.items()), rules
    for name in rules:
        code = (ROOT / "workflow" / "scripts" / f"{name}.py").read_text()
        assert f"from resispec.workflow.steps import {name}\n" in code, name
        assert f"run_step({name}, snakemake)" in code, name
        assert COMMANDS[name.replace("_", "-")] == f"resispec.workflow.steps.{name}", name


def test_validate_config_names_bad_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data:\n  num_promts: 3\n")
    result = subprocess.run(
        [sys.executable, "-m", "resispec", "validate-config", str(bad)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "data.num_promts" in result.stderr
