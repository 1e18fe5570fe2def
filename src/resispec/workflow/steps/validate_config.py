"""`resispec validate-config`: check a config file against the schema and print it with defaults."""

from __future__ import annotations

import sys

HELP = "validate a workflow config file against workflow/schemas/config.schema.yaml"


def add_arguments(parser) -> None:
    parser.add_argument("config", help="YAML config file")


def run(args) -> int:
    import yaml

    from resispec.workflow.config import ConfigError, load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    yaml.safe_dump(config, sys.stdout, sort_keys=False)
    return 0
