"""Workflow steps: one module per command of `resispec.cli` (HELP, add_arguments, run)."""
