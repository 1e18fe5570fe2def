"""Rows and the printed table of the engine benchmark: paired speedups and where the step time goes."""

from __future__ import annotations

from resispec.bench.overhead import EXACT, PARTS, share_interval
from resispec.bench.paired import paired_ratio

# The testbed's goals: the best exact engine configuration against the baselines at T = 1
GOALS = {"autoregressive": 1.5, "hf_assisted": 1.2}


def _per_prompt(timed_config):
    """Per prompt sums over repeats: tokens, seconds, forwards, split [5], overhead sums [2]."""
    out = []
    for repeats in timed_config:
        tokens, seconds = sum(t.tokens for t in repeats), sum(t.seconds for t in repeats)
        split = [sum(t.split[i] for t in repeats) for i in range(len(PARTS))]
        overhead = [sum(t.overhead[i] for t in repeats) for i in range(2)]
        out.append((tokens, seconds, sum(t.forwards for t in repeats), split, overhead))
    return out


def _shares(data, seconds: float, seed: int) -> tuple[dict, list[float]]:
    """Shares of the wall time per part (``other``: prefill and loop) and the overhead share [mean, low,
    high] over the steps after each prompt's first (bootstrap over prompts)."""
    split = [sum(d[3][i] for d in data) / seconds for i in range(len(PARTS))]
    share = dict(zip(PARTS, split, strict=True)) | {"other": 1 - sum(split)}
    overhead = share_interval([d[4][0] for d in data], [d[4][1] for d in data], seed=seed)
    return share, list(overhead)


def summarise(configs, timed, *, seed: int = 0) -> list[dict]:
    """One row per configuration with tokens/s, paired speedups over each baseline and time shares."""
    prompts = {i: _per_prompt(timed[i]) for i in timed}
    baselines = {configs[i][0]: i for i in timed if configs[i][0] != "engine"}
    rows = []
    for index, (system, tree, method, resolved) in enumerate(configs):
        data = prompts[index]
        tokens, seconds = [d[0] for d in data], [d[1] for d in data]
        row = {
            "system": system,
            "tree": tree,
            "spec": tree.split("(")[0],
            "method": method,
            "parents": list(resolved.parents) if resolved is not None else None,
            "tokens": sum(tokens),
            "seconds": sum(seconds),
        }
        row["tokens_per_s"] = sum(tokens) / max(sum(seconds), 1e-12)
        row["accepted_length"] = sum(tokens) / max(sum(d[2] for d in data), 1)
        for name, base in baselines.items():
            ref = prompts[base]
            ratio = paired_ratio(tokens, seconds, [d[0] for d in ref], [d[1] for d in ref], seed=seed)
            row[f"x_{name}"], row[f"x_{name}_ci"] = ratio.value, [ratio.low, ratio.high]
        if system == "engine":
            row["share"], row["overhead"] = _shares(data, row["seconds"], seed)
        rows.append(row)
    return rows


def print_rows(rows: list[dict]) -> None:
    bases = [name for name in GOALS if f"x_{name}" in rows[0]]
    head = f"{'system':<15}{'tree':<13}{'method':<14}{'tok/s':>8}{'acc.len':>8}"
    hf_mode = next((r.get("compile_mode") for r in rows if r["system"] == "hf_assisted"), None)
    names = {"autoregressive": "AR", "hf_assisted": f"HF-asst({hf_mode})" if hf_mode else "HF-asst"}
    head += "".join(f"{'x ' + names[b]:>22}" for b in bases)
    print(head + "   share % draft/target/verify/shaping/commit/other   overhead %   compile/verify")
    for r in rows:
        line = f"{r['system']:<15}{r['tree']:<13}{r['method']:<14}"
        line += f"{r['tokens_per_s']:>8.2f}{r['accepted_length']:>8.2f}"
        for b in bases:
            low, high = r[f"x_{b}_ci"]
            line += f"{r[f'x_{b}']:>8.2f} [{low:5.2f},{high:5.2f}]"
        if "share" in r:
            line += "   " + "/".join(f"{100 * r['share'][k]:.0f}" for k in (*PARTS, "other"))
            line += f"   {100 * r['overhead'][0]:.1f}"
        if "compile_mode" in r:
            line += f"   {r['compile_mode']}/{r['verify_mode']}"
        print(line)
    engine = [r for r in rows if r["system"] == "engine" and r["method"] in EXACT]
    if engine:
        best = max(engine, key=lambda r: r["tokens_per_s"])
        for b in bases:
            low, high = best[f"x_{b}_ci"]
            verdict = (
                "met" if low >= GOALS[b] else ("missed" if high < GOALS[b] else "not decided by this run")
            )
            name = f"{best['tree']}, {best['method']}"
            ratio = f"{best[f'x_{b}']:.2f}x {b} [{low:.2f}, {high:.2f}]"
            print(f"best exact engine configuration ({name}): {ratio}; goal >= {GOALS[b]}x: {verdict}")
