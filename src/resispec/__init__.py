"""resispec: reproducibility package for ResiSpec, with an exactness audit of multi-candidate verifiers.

Public API (imported on first use, so `import resispec` and the command line stay fast)::

    from resispec import generate, get_verifier, output_law, acceptance_rate, alpha_star, METHODS

The stages of the data flow are subpackages (map: docs/architecture.md): `corpora`, `models`,
`decoding`, `verify`, `audit`, `report`, with the workflow glue in `workflow`.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_API = {
    "generate": "resispec.decoding.engine",
    "get_verifier": "resispec.verify",
    "output_law": "resispec.verify",
    "acceptance_rate": "resispec.verify",
    "alpha_star": "resispec.verify",
    "METHODS": "resispec.verify",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'resispec' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
