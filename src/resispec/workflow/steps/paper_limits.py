"""`resispec paper-limits`: the largest expected accepted length (bonus token included) any exact verifier
with k i.i.d. candidates per node can reach on a complete tree dXbY, given a single-candidate chain's
length (resispec.audit.tree_limits); with --csv, the paper-limits table of the report
(results/tables/paper_limits.csv: the paper's ResiSpec cells and our own runs)."""

from __future__ import annotations

import argparse
import logging
import re

from resispec.workflow.steps.common import add_settings

HELP = (
    "largest accepted length an exact verifier can reach on a dXbY tree given a chain's accepted length "
    "(same acceptance per level, and any joint law: a true upper bound); --csv writes the paper-limits table"
)
log = logging.getLogger(__name__)


def chain_eal(text: str) -> float:
    """argparse type: an expected accepted length >= 1 (bonus token included)."""
    value = float(text)
    if not value >= 1.0:
        raise argparse.ArgumentTypeError(f"--chain-eal must be >= 1 (bonus token included), got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    if not re.fullmatch(r"\d+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def complete_tree(text: str) -> tuple[int, int]:
    """argparse type: 'dXbY' (X levels counting the root, Y children per node) -> (X - 1, Y)."""
    match = re.fullmatch(r"d(\d+)b(\d+)", text.strip().lower())
    if not match or int(match.group(1)) < 2 or int(match.group(2)) < 1:
        raise argparse.ArgumentTypeError(
            f"--tree must be dXbY with X >= 2 and Y >= 1 (e.g. d5b3), got {text!r}"
        )
    return int(match.group(1)) - 1, int(match.group(2))


def add_arguments(parser) -> None:
    parser.add_argument("--chain-eal", dest="chain_eal", type=chain_eal, help="the chain's accepted length")
    parser.add_argument(
        "--chain-levels", dest="chain_levels", type=positive_int, help="the chain's drafted levels"
    )
    parser.add_argument("--tree", type=complete_tree, help="complete tree dXbY (X counts the root)")
    parser.add_argument("--k", type=positive_int, help="i.i.d. candidates per node (default: the tree's Y)")
    parser.add_argument("--tolerance", type=float, default=0.01, help="largest gap between (b)'s two values")
    parser.add_argument(
        "--tables", nargs="*", default=[], help="--csv: our tidy tables (their folder is read)"
    )
    parser.add_argument(
        "--csv", help="write the paper-limits table (paper cells, and our runs with --tables)"
    )
    add_settings(parser)


def print_limit(args) -> int:
    from resispec.audit.tree_limits import tree_limit

    tree_levels, branch = args.tree
    k = args.k or branch
    try:
        limit = tree_limit(args.chain_eal, args.chain_levels, tree_levels, k, tolerance=args.tolerance)
    except ValueError as exc:
        raise SystemExit(f"resispec paper-limits: {exc}") from exc
    low, high = limit.envelope_low, limit.envelope_high
    print(f"chain: {args.chain_levels} drafted levels, accepted length {args.chain_eal:g} (bonus included)")
    print(f"tree: {tree_levels} candidate levels, k = {k} i.i.d. candidates per node, exact verifier")
    print(
        f"(a) same acceptance at every level (b = {limit.same_acceptance:.4f}): {limit.same_level_limit:.4f}"
    )
    print(f"(b) any joint law of per-level acceptances: {low:.4f} <= sup <= {high:.4f}")
    print(f"largest expected accepted length (a true upper bound): {limit.envelope_high:.4f}")
    return 0


def write_table(args) -> int:
    from pathlib import Path

    from resispec.report.paper import load_paper_values
    from resispec.report.paper_limits import limits_table
    from resispec.report.tidy import load_tables

    tables = load_tables(Path(args.tables[0]).parent) if args.tables else {}
    frame = limits_table(load_paper_values(), tables, tolerance=args.tolerance)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.csv, index=False)
    shown = frame[frame["verdict"] != "not constrained"]
    for _, row in shown.iterrows():
        print(
            f"{row['source']}\t{row['table']}\t{row['tree']}\t{row['method']}\t{row['value']:.3f}\t"
            f"{row['convention']}\t[{row['bound_low']:.3f}, {row['bound_high']:.3f}]\t{row['verdict']}"
        )
    log.info("wrote %d rows (%d constrained) to %s", len(frame), len(shown), args.csv)
    return 0


def run(args) -> int:
    if args.csv:
        return write_table(args)
    missing = [f"--{name}" for name in ("chain_eal", "chain_levels", "tree") if getattr(args, name) is None]
    if missing:
        raise SystemExit(
            f"resispec paper-limits: {', '.join(m.replace('_', '-') for m in missing)} required "
            f"(or --csv OUT for the table)"
        )
    return print_limit(args)
