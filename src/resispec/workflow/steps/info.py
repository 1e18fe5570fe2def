"""`resispec info`: versions, hardware and the devices torch can see."""

from __future__ import annotations

import json

HELP = "print package versions, hardware and available devices (JSON)"


def add_arguments(parser) -> None:
    parser.add_argument("--out", help="also write the JSON to this file")
    parser.add_argument("--threads", type=int, help="ignored (workflow bridge)")


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


def run(args) -> int:
    text = json.dumps(collect(), indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    return 0
