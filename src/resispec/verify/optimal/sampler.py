"""``optimal``'s per-node sampler: the plan of ``law.build_plan``, the perturbed-priority selection of
``law.select_position`` and the single-draft step, one node per call (the audit's reference)."""

from __future__ import annotations

import time

import torch

from ..checks import as_float64
from ..samplers import Verifier, VerifyOutcome, draw, uniform
from .law import accept_probability, build_plan, select_position


class OptimalVerifier(Verifier):
    """Perturbed-priority selection, then a single-draft speculative step (``law.py``); attains alpha*.

    ``accepted_index`` is the selected position (duplicates allowed). ``last_timings``: the plan under
    "budgeting", the selection under "redistribution", the accept / residual step under "proxy".
    """

    method = "optimal"
    draws = "with_replacement"

    def _verify(self, target, draft, candidates, generator):
        start = time.perf_counter()
        target, draft = as_float64(target, draft)  # plan in float64 whatever the model dtype
        plan = build_plan(target, draft, len(candidates))
        start = self._tick("budgeting", start)
        tokens = torch.tensor(candidates, device=target.device)
        index = select_position(plan, tokens, draft[tokens] > 0, generator)
        start = self._tick("redistribution", start)
        if index is not None:
            token = candidates[index]
            accept = accept_probability(target[token], plan.selection[token])
            if bool(uniform(target, generator) < accept):
                self._tick("proxy", start)
                return VerifyOutcome(index, token)
        token = draw((target - plan.selection).clamp_min(0), generator, target)
        self._tick("proxy", start)
        return VerifyOutcome(None, token)
