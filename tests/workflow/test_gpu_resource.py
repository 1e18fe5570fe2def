"""Local GPU runs schedule GPU jobs: the GPU rules (models, pair profile, both decoding passes) declare a
`gpu` resource, 1 per job when the models run on CUDA and 0 on a CPU, so that `snakemake --resources
gpu=N` never puts two of them on one device; the CPU rules declare none (dry-run DAGs, offline)."""

import re

import pytest
from workflow_helpers import GPU_RULES, REPO, snakemake


def _gpu_per_rule(configfile: str | None) -> dict[str, set]:
    args = ["-n", "--forceall", "--cores", "1"] + (["--configfile", configfile] if configfile else [])
    plan = snakemake(args, REPO, timeout=300).stdout
    seen: dict[str, set] = {}
    for block in re.split(r"^rule ", plan, flags=re.MULTILINE)[1:]:
        rule = block.split(":", 1)[0]
        match = re.search(r"resources: .*?\bgpu=(\d+)", block)
        seen.setdefault(rule, set()).add(int(match.group(1)) if match else None)
    return seen


@pytest.mark.parametrize("configfile, gpus", [("config/paper.yaml", 1), (None, 0)])
def test_gpu_rules_declare_a_gpu_resource(configfile, gpus):
    seen = _gpu_per_rule(configfile)
    trains = configfile is None  # config/paper.yaml trains no model, so its DAG has no teacher pass
    assert (GPU_RULES if trains else GPU_RULES - {"teacher"}) <= set(seen)
    for rule, values in seen.items():
        assert values == ({gpus} if rule in GPU_RULES else {None}), (rule, values)
