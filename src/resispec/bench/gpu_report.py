"""The printed table and the goal lines of ``bench gpu`` (from the result dict its JSON holds)."""

from __future__ import annotations

import numpy as np

from resispec.bench.overhead import (
    EXACT,
    OPTIMAL_OVER_SPECINFER_GOAL,
    PARTS,
    STEP_OVER_FORWARD_GOAL,
    Interval,
    goal_line,
    ratio_interval,
    undecided,
)

GOAL_TREE, GOAL_NODES = "d5b3", 121  # the GPU goals' tree and its node count


def _row(result: dict, tree: str, method: str) -> dict | None:
    return next((r for r in result["engine"] if r["tree"] == tree and r["method"] == method), None)


def _applies(result: dict) -> str | None:
    """Why the GPU goals cannot be decided by this run (None when they can)."""
    env, scale = result["environment"], result["settings"]["scale"]
    if env["device"].startswith("cuda") and scale == "paper":
        return None
    return f"this run is {env['device']} at scale {scale}, the goals are for a CUDA GPU at paper scale"


def goal_lines(result: dict) -> list[str]:
    """The engine's GPU goals (met / missed / not decided) and the overhead share of each exact method on
    d5b3 and auto (no GPU goal of their own; the CPU goal is `bench engine`'s, on the CPU default pair)."""
    why_not = _applies(result)
    spec, opt = _row(result, GOAL_TREE, "specinfer"), _row(result, GOAL_TREE, "optimal")
    forward = next((r for r in result["target_forward"] if r["nodes"] == GOAL_NODES), None)
    lines = []
    label = f"GPU goal, {GOAL_TREE} specinfer step / its {GOAL_NODES}-node target forward"
    if spec is None or forward is None:
        needs = f"needs {GOAL_TREE}, specinfer and {GOAL_NODES} in --nodes"
        lines.append(f"{label}: not run ({needs}): not decided")
    else:
        ratio = ratio_interval(spec["step_s"], forward["seconds"], b_stat=np.median)
        lines.append(undecided(goal_line(label, ratio, STEP_OVER_FORWARD_GOAL), why_not))
    label = f"GPU goal, {GOAL_TREE} optimal step / specinfer step"
    if spec is None or opt is None:
        lines.append(f"{label}: not run (needs {GOAL_TREE}, specinfer and optimal): not decided")
    else:
        ratio = ratio_interval(opt["step_s"], spec["step_s"])
        lines.append(undecided(goal_line(label, ratio, OPTIMAL_OVER_SPECINFER_GOAL), why_not))
    for tree in (GOAL_TREE, "auto"):
        rows = [r for r in result["engine"] if r["tree"] == tree and r["method"] in EXACT]
        if not rows:
            lines.append(f"overhead share {tree}: not run (add {tree} to --trees)")
        for row in rows:
            share = Interval(*row["overhead"])
            label = f"overhead share {tree} ({row['nodes']} nodes) {row['method']}"
            lines.append(
                f"{label}: {100 * share.mean:.1f}% [{100 * share.low:.1f}, {100 * share.high:.1f}] "
                "(no GPU goal)"
            )
    return lines


def _header(result: dict) -> list[str]:
    env, pair = result["environment"], result["pair"]
    target, draft = pair["target"], pair["draft"]
    return [
        f"bench gpu: {env['device_name']} ({env['device']}), {env['dtype']}, torch {env['torch']}, "
        f"transformers {env['transformers']}, scale {pair['scale']}",
        f"target {target['repo']} shape: {_count(target['parameters'])} parameters, "
        f"{target['num_hidden_layers']} layers x {target['hidden_size']}; draft {draft['repo']} shape: "
        f"{_count(draft['parameters'])}, {draft['num_hidden_layers']} layers x {draft['hidden_size']}; "
        f"random weights, single-candidate acceptance {pair['acceptance']:.2f}, target entropy "
        f"{pair['target_entropy']:.2f} nats (T = {result['settings']['temperature']:g})",
        f"engine compile mode: {_compile_mode(result)}; the forwards below are eager transformers calls",
    ]


def _compile_mode(result: dict) -> str:
    """The ``compile_mode`` the engine was given (``auto``: its choice for the device)."""
    mode = result["settings"].get("compile")
    return {None: "auto (the engine's choice)", "none": "none (eager)"}.get(mode, mode)


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M" if n >= 1e5 else f"{n / 1e3:.0f}k"


def _forwards(title: str, rows: list[dict], key: str) -> list[str]:
    cells = [f"{r['nodes']}: {r['median_ms']:.2f} [{r['p10_ms']:.2f}-{r['p90_ms']:.2f}]" for r in rows]
    lines = [f"{title} (ms, median [p10-p90] of {rows[0]['n']}; {key}: time)"]
    for i in range(0, len(cells), 4):
        lines.append("  " + "   ".join(f"{c:<26}" for c in cells[i : i + 4]).rstrip())
    return lines


def engine_table(rows: list[dict]) -> list[str]:
    head = f"{'tree':<7}{'N':>4} {'method':<14}{'L':>5}{'step ms [p10-p90]':>24}"
    head += "".join(f"{p:>9}" for p in (*PARTS, "between")) + f"{'syncs':>8}{'overhead':>10}"
    lines = [
        head,
        "  (N: tree nodes; L: new tokens per step; parts: mean ms per step; syncs: blocking host "
        "syncs per step)",
    ]
    for r in rows:
        step = r["step"]
        line = f"{r['tree']:<7}{r['nodes']:>4} {r['method']:<14}{r['accepted_length']:>5.2f}"
        line += f"{step['median_ms']:>9.2f} [{step['p10_ms']:6.2f}-{step['p90_ms']:6.2f}]"
        line += "".join(f"{r['parts_ms'][p]:>9.2f}" for p in PARTS) + f"{r['between_ms']:>9.2f}"
        syncs = "-" if r["syncs_per_step"] is None else f"{r['syncs_per_step']:.1f}"
        line += f"{syncs:>8}{100 * r['overhead'][0]:>9.1f}%"
        lines.append(line)
    return lines


def print_report(result: dict) -> None:
    lines = _header(result)
    lines += _forwards("target forward over n tree nodes", result["target_forward"], "nodes")
    lines += _forwards("draft forward of one level of n nodes", result["draft_level"], "nodes")
    check = result["engine_check"]
    lines.append(
        f"engine check (greedy tree decoding = transformers' greedy generation, models called with "
        f"{check['cache_keyword']}): {'passed' if check['ok'] else 'FAILED'}"
    )
    lines += engine_table(result["engine"])
    lines += result["goals"]
    lines.append(f"elapsed: {result['elapsed_s']:.0f} s")
    print("\n".join(lines))
