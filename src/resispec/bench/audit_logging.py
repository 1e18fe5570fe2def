"""What the audit's logging costs the timing pass it rides in: every method decodes the same prompts
from the same seeds with the audit's logging off and on (``audit_top``: each visited node's rows copied in
the step, its entry built after the generation is timed, `decoding.walk.finish_audit`).

    python -m resispec.bench audit_logging --target results/models/smollm2-135m \\
        --draft results/models/draft-default --prompts results/prompts/smollm2-135m/cnn_dailymail.jsonl

As the timing pass does: caches sized and graphs built first, a warm-up of ``WARMUP_NEW_TOKENS`` per method
and setting, the methods interleaved per prompt. Each (method, prompt, round) decodes once per setting, in
ABBA order (off-on, then on-off, alternating over prompts and rounds), so drifting load hits both alike.
Per method the table prints each setting's timed wall time per token (``wall_s``, what the timing pass
records), the ratio on / off with a paired bootstrap 95% interval over the (prompt, round) pairs, the
seconds per generation the entries take after the timing (outside ``wall_s``) and whether both settings
gave the same tokens in every pair.
"""

from __future__ import annotations

import time

from resispec.bench.paired import paired_ratio
from resispec.bench.warm_up import open_session, session_parser

SETTINGS = ("off", "on")


def parse(argv):
    parser = session_parser("python -m resispec.bench audit_logging", __doc__)
    parser.set_defaults(methods="specinfer,resispec,ers,optimal")
    parser.add_argument("--rounds", type=int, default=2, help="decodings per (method, prompt) and setting")
    parser.add_argument("--top", type=int, default=256, help="audit_top: tokens kept per node")
    return parser.parse_args(argv)


def decode(session, method: str, prompt: dict, seed: int, top: int | None) -> tuple[object, float]:
    """(output, seconds the call took beyond its timed ``wall_s``)."""
    start = time.perf_counter()
    output = session.generate(method, prompt, seed, audit_top=top)
    return output, time.perf_counter() - start - output.wall_s


def measure(session, job: dict, prompts: list[dict], rounds: int, top: int) -> dict[str, dict[str, list]]:
    """Per method and setting: tokens, ``wall_s`` and seconds after the timing, per (prompt, round) pair in
    one order; ``same``: whether the pair's two generations gave the same tokens."""
    from resispec.decoding.order import interleaved, prompt_seed, warm_up_prompt

    seed = lambda prompt: prompt_seed(0, job, prompt["prompt_id"])  # noqa: E731
    tops = {"off": None, "on": top}
    warm = warm_up_prompt(prompts[0])
    for method in job["methods"]:
        for name in SETTINGS:
            session.generate(method, warm, seed(warm), audit_top=tops[name])
    keys = [f"{name}_{field}" for name in SETTINGS for field in ("tokens", "wall", "after")]
    results = {method: {key: [] for key in [*keys, "same"]} for method in job["methods"]}
    for round_index in range(rounds):
        for index, (method, prompt) in enumerate(interleaved(job["methods"], prompts, set())):
            order = SETTINGS if (round_index + index) % 2 == 0 else SETTINGS[::-1]
            outputs = {}
            for name in order:
                output, after = decode(session, method, prompt, seed(prompt), tops[name])
                outputs[name] = output
                row = results[method]
                row[f"{name}_tokens"].append(len(output.tokens))
                row[f"{name}_wall"].append(output.wall_s)
                row[f"{name}_after"].append(after)
            results[method]["same"].append(bool((outputs["off"].tokens == outputs["on"].tokens).all()))
    return results


def report(results: dict[str, dict[str, list]]) -> list[str]:
    """The table's lines: per method, ms per token off and on, on / off [95%], s after, same tokens."""
    lines = [f"{'method':<12}{'off ms/tok':>11}{'on ms/tok':>11}{'on/off [95%]':>24}{'after s':>9}  same"]
    for method, row in results.items():
        per_token = {name: 1e3 * sum(row[f"{name}_wall"]) / sum(row[f"{name}_tokens"]) for name in SETTINGS}
        ratio = paired_ratio(row["off_tokens"], row["off_wall"], row["on_tokens"], row["on_wall"])
        interval = f"{ratio.value:.3f} [{ratio.low:.3f}, {ratio.high:.3f}]"
        after = (sum(row["on_after"]) - sum(row["off_after"])) / len(row["on_after"])
        same = f"{sum(row['same'])}/{len(row['same'])}"
        times = f"{per_token['off']:>11.1f}{per_token['on']:>11.1f}"
        lines.append(f"{method:<12}{times}{interval:>24}{after:>9.3f}  {same}")
    return lines


def main(argv=None) -> int:
    from resispec.report.environment import collect_environment

    args = parse(argv)
    session, job, prompts = open_session(args, "audit-logging")
    results = measure(session, job, prompts, args.rounds, args.top)
    environment = collect_environment()
    print(
        f"audit logging off vs on (audit_top={args.top}), {args.tree}, T={args.temperature:g}, "
        f"{len(prompts)} prompts x {args.rounds} rounds, {args.threads} threads, {args.device}; "
        f"CPU {environment['CPU']}, accelerators {environment['accelerators']}"
    )
    print("\n".join(report(results)))
    return 0
