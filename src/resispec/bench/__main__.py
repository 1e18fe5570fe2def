"""Dispatch ``python -m resispec.bench <name> ...`` to ``resispec.bench.<name>.main(argv)``.

Every module of this package other than ``__main__`` and helpers listed in ``HELPERS`` is a subcommand.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

import resispec.bench as package

HELPERS = {"pairs", "paired", "engine_runs", "engine_report", "forward", "overhead"}
HELPERS |= {"gpu_pair", "gpu_timing", "gpu_report", "gpu_compat"}  # bench gpu's parts


def subcommands() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_") and info.name not in HELPERS
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m resispec.bench", description=__doc__)
    parser.add_argument("name", choices=subcommands(), help="benchmark to run; `<name> -h` for its options")
    args = parser.parse_args(argv[:1])
    # the library's progress lines (pair profile, decoding) on stderr, as under `resispec`
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    module = importlib.import_module(f"resispec.bench.{args.name}")
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
