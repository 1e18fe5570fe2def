"""`resispec prompt-count`: per run, the paired ratio of two methods (default: Table 1's accepted-length
gain, resispec / specinfer), its 95% half-width and the prompt count that brings it to 10% of the ratio."""

from __future__ import annotations

import logging

from resispec.workflow.cli_types import (
    bounded_float,
    bounded_int,
    existing_file,
    method_name,
    nonnegative_int,
)

HELP = "95% half-width of a paired ratio per run (Table 1's accepted-length gain) and the prompts needed"
log = logging.getLogger(__name__)
# per-prompt metrics of resispec.audit.statistics.prompt_metrics
METRICS = (
    "accepted_length",
    "throughput",
    "steps",
    "new_tokens",
    "time_step_s",
    "time_draft_s",
    "time_target_s",
    "time_verify_s",
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--records", nargs="+", type=existing_file, required=True, help="raw record JSONL files (timing pass)"
    )
    parser.add_argument(
        "--numerator", type=method_name, default="resispec", help="method on top of the ratio"
    )
    parser.add_argument("--denominator", type=method_name, default="specinfer", help="method below")
    parser.add_argument("--metric", choices=METRICS, default="accepted_length", help="per-prompt metric")
    parser.add_argument(
        "--target", type=bounded_float(0, 1, closed=False), default=0.10, help="relative half-width to reach"
    )
    parser.add_argument("--bootstrap", type=bounded_int(2), default=1000, help="bootstrap resamples")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="bootstrap seed")


def run(args) -> int:
    from resispec.audit.aggregate import read_records, run_of
    from resispec.audit.prompt_count import ratio_precision

    ratio = f"{args.numerator}/{args.denominator}"
    print(f"run\tprompts\t{ratio}\t95% CI\thalf-width\tprompts for {args.target:.0%}")
    for path in args.records:
        est = ratio_precision(
            read_records(path),
            args.numerator,
            args.denominator,
            metric=args.metric,
            resamples=args.bootstrap,
            seed=args.seed,
            target=args.target,
        )
        print(
            f"{run_of(path)}\t{est.n}\t{est.ratio:.4f}\t[{est.low:.4f}, {est.high:.4f}]\t"
            f"{est.relative_half_width:.1%}\t{est.prompts_needed}"
        )
    return 0
