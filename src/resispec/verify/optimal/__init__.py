"""``optimal``: the optimal exact verifier for k i.i.d. candidates (docs/optimal-verifier.md).

One node: select a candidate by perturbed priority from the plan's selection law r, accept it with
probability min(1, p / r), else draw the residual (p - r)^+: exact for any r, and the plan's r makes the
acceptance equal alpha*. The family's modules:

- ``plan.py``: the plan's terms and per-node pieces (ratio order, segments, water level, stick-breaking,
  Newton, key tables; sections 1-7), in float64;
- ``law.py``: the per-node plan ``build_plan``, the exact law ``optimal_law``, the selection
  ``select_position`` (sections 2 and 8);
- ``sampler.py``: the per-node sampler ``OptimalVerifier``;
- ``plan_tables.py`` and ``batched.py``: the plans of many rows at once with fixed shapes
  (``plan_rows``, ``verify_optimal_rows``) and the row-by-row per-node plan (``verify_optimal_per_node``);
- here: ``Optimal``, the method's registry object.
"""

from __future__ import annotations

from ..method_base import BuiltIn
from ..rows import leaf_outcome
from .batched import verify_optimal_per_node, verify_optimal_rows
from .law import optimal_law
from .sampler import OptimalVerifier

__all__ = ["Optimal"]


class Optimal(BuiltIn):
    """Perturbed-priority selection then a single-draft step (``law.py``): exact, attains alpha*."""

    name, exact, draws, host_planner = "optimal", True, "with_replacement", True
    sequential, every_run = False, True
    beside_note = "not in the paper: our optimal exact verifier (attains alpha* at every node)"
    sampler = OptimalVerifier
    law_of = staticmethod(optimal_law)

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        if candidates.shape[1] == 0:
            return leaf_outcome(target_rows, generator)
        if host_plan:
            return verify_optimal_per_node(target_rows, draft_rows, candidates, valid, generator)
        return verify_optimal_rows(target_rows, draft_rows, candidates, valid, generator, tick)
