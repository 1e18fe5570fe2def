"""Hardware and software versions for the report."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from importlib import metadata

PACKAGES = ("resispec", "torch", "transformers", "numpy", "scipy", "pandas", "matplotlib", "snakemake")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> str:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return f"{pages * size / 2**30:.1f} GiB"
    except (ValueError, OSError, AttributeError):
        return "unknown"


def _accelerators() -> str:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if torch.cuda.is_available():
        return ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    return "none (CPU only)"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def collect_environment() -> dict[str, str]:
    """Where the report was built: OS, CPU, memory, accelerators, Python and package versions."""
    info = {
        "host OS": platform.platform(),
        "CPU": f"{_cpu_model()} ({os.cpu_count()} logical cores)",
        "memory": _memory_gib(),
        "accelerators": _accelerators(),
        "python": sys.version.split()[0],
    }
    info.update({name: _version(name) for name in PACKAGES})
    return info


def environment_note(environment: dict | None, config: dict) -> str:
    """The report's line above the hardware table: whose record it shows."""
    if not environment:
        return "Collected where the report was built (no record from the run)."
    recorded, described = environment.get("run_name"), config.get("run_name")
    if recorded is None:
        return "Recorded by the run."
    if described is not None and recorded != described:
        return f"Recorded by run {recorded!r}, not by the run this report describes ({described!r})."
    return f"Recorded by run {recorded!r} where it ran."


@dataclass(frozen=True)
class RunSetup:
    """What the report's last sections show: the run's ``config``, the hardware and versions
    (``environment``) and the ``note`` above them saying whose record it is."""

    config: dict
    environment: dict
    note: str

    @classmethod
    def of(cls, config: dict, environment: dict | None = None) -> RunSetup:
        """``environment``: the run's record; None collects it here (and the note says so)."""
        return cls(config, environment or collect_environment(), environment_note(environment, config))
