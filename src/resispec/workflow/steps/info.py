"""`resispec info`: versions, hardware and the devices torch can see; with `--plan`, the GPU plan of a
config before submission (`resispec.workflow.plan`: memory and time per model job, recommended resources)."""

from __future__ import annotations

import json

from resispec.workflow.cli_types import existing_file, positive_int

HELP = "print package versions, hardware and available devices (JSON)"


def add_arguments(parser) -> None:
    parser.add_argument("--out", help="also write the JSON to this file")
    parser.add_argument("--threads", type=positive_int, help="ignored (workflow bridge)")
    parser.add_argument("--plan", action="store_true", help="print the GPU plan of --configfile instead")
    parser.add_argument(
        "--configfile",
        nargs="+",
        type=existing_file,
        default=["config/paper.yaml"],
        help="config(s) for --plan",
    )
    from resispec.workflow.plan import GPUS  # no heavy imports: `--help` stays fast

    parser.add_argument("--gpu", default="a100-40gb", choices=sorted(GPUS), help="GPU of the plan")


def collect() -> dict:
    import os
    import platform
    from importlib import metadata

    import torch

    packages = ["resispec", "torch", "transformers", "snakemake", "scipy", "numpy", "datasets", "matplotlib"]
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    cuda = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda_devices": cuda,
        "versions": versions,
    }


def print_plan(args) -> int:
    from resispec.workflow.config import load_configs
    from resispec.workflow.plan import GPUS, format_plan, plan
    from resispec.workflow.sheets import expand_jobs, group_runs

    config = load_configs(args.configfile)
    print(format_plan(plan(config, GPUS[args.gpu], group_runs(expand_jobs(config))), GPUS[args.gpu]))
    return 0


def run(args) -> int:
    if getattr(args, "plan", False):
        return print_plan(args)
    text = json.dumps(collect(), indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    return 0
