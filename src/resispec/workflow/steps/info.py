"""`resispec info`: versions, hardware and the devices torch can see; with `--plan`, the GPU plan of a
config before submission (`resispec.workflow.plan`: memory and time per model job, recommended resources)."""

from __future__ import annotations

import json

from resispec.workflow.cli_types import existing_file, json_object, positive_int

HELP = "print package versions, hardware and available devices (JSON)"


def add_arguments(parser) -> None:
    parser.add_argument("--out", help="also write the JSON to this file")
    parser.add_argument(
        "--run", type=json_object, help="the run the record describes (run_name, device, dtype: JSON)"
    )
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


RECORD_VERSIONS = ("resispec", "torch", "transformers")  # a new version of these records the run again


def record_key(config: dict) -> dict:
    """What makes one run's environment record differ from another's: its name, device and dtype, the
    machine the workflow runs on and the versions that compute the numbers. The workflow passes it as
    the record rule's params, so a change of any (the paper configuration after the embedded default in
    the same results folder, another machine) records the environment again."""
    import socket
    from importlib import metadata

    versions = {}
    for name in RECORD_VERSIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    keys = ("run_name", "device", "dtype")
    return {**{key: config[key] for key in keys}, "host": socket.gethostname(), "versions": versions}


def collect(run: dict | None = None) -> dict:
    """The record: the run it describes (``record_key``; a dtype ``auto`` with what it is on this machine),
    then the hardware and versions found here (`resispec.report.environment.collect_environment`) and
    torch's thread count."""
    import platform

    import torch

    from resispec.models.precision import AUTO, resolve_dtype
    from resispec.report.environment import collect_environment

    described = {key: run[key] for key in ("run_name", "device", "dtype") if key in (run or {})}
    if described.get("dtype") == AUTO and "device" in described:  # what auto is on this machine
        described["dtype"] = f"{AUTO}: {resolve_dtype(AUTO, described['device'])} here"
    here = {"host": platform.node(), **collect_environment(), "torch threads": str(torch.get_num_threads())}
    return {**described, **here}


def print_plan(args) -> int:
    from resispec.workflow.config import load_configs
    from resispec.workflow.plan import GPUS, format_plan, plan
    from resispec.workflow.sheets import expand_jobs, group_baselines, group_runs

    config = load_configs(args.configfile)
    jobs = expand_jobs(config)
    print(format_plan(plan(config, GPUS[args.gpu], group_runs(jobs), group_baselines(jobs)), GPUS[args.gpu]))
    return 0


def run(args) -> int:
    if getattr(args, "plan", False):
        return print_plan(args)
    text = json.dumps(collect(args.run), indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    return 0
