"""Stage 5, exactness audit and tidy statistics.

Owns: the per-node exactness check of logged nodes (`exactness`: each verifier's exact law against the
target, KL and TV with scipy, acceptance against alpha*), the statistics (`statistics`: bootstrap
intervals, per-prompt metrics) and the tidy tables (`aggregate`).
May import: `resispec.verify`.
"""

from resispec.audit.aggregate import table_rows, write_table
from resispec.audit.exactness import exactness_rows, node_exactness
from resispec.audit.statistics import bootstrap_ci, kl_divergence, summarise, total_variation

__all__ = [
    "bootstrap_ci",
    "exactness_rows",
    "kl_divergence",
    "node_exactness",
    "summarise",
    "table_rows",
    "total_variation",
    "write_table",
]
