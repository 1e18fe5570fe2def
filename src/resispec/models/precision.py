"""The models' precision: the config's dtype names, and ``auto`` resolved for the device that runs them.

``auto`` is bfloat16 where the device computes it natively (a CUDA GPU with bfloat16, a CPU with
AVX512-BF16 or AMX tiles) and float32 elsewhere: without native units torch emulates bfloat16 matrix
products, several times slower than float32 (docs/reproduction-notes.md, "Training precision on CPUs
without bfloat16" and "Decoding precision: dtype auto"). Each raw record says the dtype it ran in.
"""

from __future__ import annotations

AUTO = "auto"
DTYPES = ("float32", "bfloat16", "float16")


def cpu_has_bfloat16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX tiles)."""
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def device_has_bfloat16(device) -> bool:
    """Whether ``device`` (a name or a torch.device) computes in bfloat16 natively: a CPU by
    ``cpu_has_bfloat16``, a CUDA GPU by torch's own check; any other device is not assumed to."""
    import torch

    kind = torch.device(device).type
    if kind == "cpu":
        return cpu_has_bfloat16()
    if kind == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return False


def resolve_dtype(name: str, device) -> str:
    """The dtype name a model on ``device`` runs in: ``name`` itself, or for ``auto`` bfloat16 where the
    device has native bfloat16 (``device_has_bfloat16``) and float32 elsewhere."""
    return dtype_for(name, native_bfloat16=name == AUTO and device_has_bfloat16(device))


def dtype_for(name: str, *, native_bfloat16: bool) -> str:
    """The dtype name ``name`` runs in on hardware with (or without) native bfloat16; ValueError naming
    the allowed names for any other. Imports no torch (the GPU plan of `resispec info` uses it)."""
    if name == AUTO:
        return "bfloat16" if native_bfloat16 else "float32"
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join((AUTO, *DTYPES))}")
    return name
