"""Command line: `python -m resispec <command>` (or the `resispec` script); see
`resispec.workflow.commands` for the commands, each a module of `resispec.workflow.steps`."""

from resispec.workflow.commands import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
