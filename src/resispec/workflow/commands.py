"""The commands of `python -m resispec <command>` (or the `resispec` script).

Every workflow step is a command here; `workflow/scripts/` only forward Snakemake's inputs to these
functions. A command is a module under `resispec.workflow.steps` exposing `HELP`, `add_arguments(parser)` and
`run(args) -> int`; heavy imports happen inside `run`, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

COMMANDS = {
    "info": "resispec.workflow.steps.info",
    "validate-config": "resispec.workflow.steps.validate_config",
    "prepare-data": "resispec.workflow.steps.prepare_data",
    "teacher": "resispec.workflow.steps.teacher",
    "prepare-model": "resispec.workflow.steps.prepare_model",
    "profile-pair": "resispec.workflow.steps.profile_pair",
    "decode": "resispec.workflow.steps.decode",
    "baseline": "resispec.workflow.steps.baseline",
    "exactness": "resispec.workflow.steps.exactness",
    "aggregate": "resispec.workflow.steps.aggregate",
    "notebook": "resispec.workflow.steps.notebook",
    "report": "resispec.workflow.steps.report",
    "bench": "resispec.workflow.steps.bench",
    "rehearsal-cache": "resispec.workflow.steps.rehearsal_cache",
    "prompt-count": "resispec.workflow.steps.prompt_count",
    "paper-limits": "resispec.workflow.steps.paper_limits",
}


def _available_commands() -> dict[str, object]:
    modules = {}
    for name, module_name in COMMANDS.items():
        try:
            modules[name] = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="resispec", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in _available_commands().items():
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return int(args._run(args) or 0)
