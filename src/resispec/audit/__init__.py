"""Stage 5, exactness audit and tidy statistics.

Owns: the per-node exactness check of logged nodes (`exactness`: each verifier's exact law against the
target, KL and TV with scipy, acceptance against alpha*), the statistics (`statistics`: bootstrap
intervals, per-prompt metrics) and the tidy tables (`aggregate`).
May import: `resispec.verify`.
"""

import importlib

_WHERE = {
    "table_rows": "aggregate",
    "write_table": "aggregate",
    "exactness_rows": "exactness",
    "node_exactness": "exactness",
    "bootstrap_ci": "statistics",
    "kl_divergence": "statistics",
    "summarise": "statistics",
    "total_variation": "statistics",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    """The public names, imported when first used: a job that aggregates tables (numpy) does not import
    the exactness check's verifiers (torch, scipy)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
