"""`resispec bench NAME ...`: run a benchmark script (`python -m resispec.bench NAME` does the same)."""

from __future__ import annotations

import argparse

HELP = "run a benchmark (verify, engine): prints tables of ratios"


def add_arguments(parser) -> None:
    parser.add_argument("name", help="benchmark name: a module of resispec.bench")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the benchmark")


def run(args) -> int:
    import importlib

    module = importlib.import_module(f"resispec.bench.{args.name}")
    return int(module.main(args.rest) or 0)
