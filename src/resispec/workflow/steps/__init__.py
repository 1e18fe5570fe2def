"""Workflow steps: one module per command of `resispec.workflow.commands` (HELP, add_arguments, run)."""
