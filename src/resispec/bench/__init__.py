"""Benchmarks (not timed tests): ``python -m resispec.bench <name> [options]``.

Each subcommand is the module ``resispec.bench.<name>`` exposing ``main(argv) -> int``.
"""
