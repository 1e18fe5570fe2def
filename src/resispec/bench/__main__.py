"""Dispatch ``python -m resispec.bench <name> ...`` to ``resispec.bench.<name>.main(argv)``."""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {"verify": "acceptance and per-node cost of every verifier (issue 3)"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m resispec.bench", description=__doc__)
    parser.add_argument(
        "name", choices=sorted(SUBCOMMANDS), help="; ".join(f"{k}: {v}" for k, v in SUBCOMMANDS.items())
    )
    args, rest = parser.parse_known_args(argv[:1])
    module = importlib.import_module(f"resispec.bench.{args.name}")
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
