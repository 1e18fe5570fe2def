"""Workflow glue: what Snakemake and the command line need around the stages.

Owns: config validation against the schema (`config`), experiment sheets and decoding runs (`sheets`),
every result path (`paths`), append-only resumable files (`resume`, `run_files`), the command line
(`commands`, one module per command in `steps`) and the Snakemake bridge (`bridge`).
May import: every stage package (`corpora`, `models`, `decoding`, `verify`, `audit`, `report`) and
`resispec.bench`. No stage imports it.
"""

__all__: list[str] = []  # import the modules themselves (config, sheets, paths, ...)
