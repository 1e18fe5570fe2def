"""Named results of the law computations (shared by every family and the public API)."""

from __future__ import annotations

from typing import NamedTuple

import torch


class LawResult(NamedTuple):
    """evaluate: law [V] float64 (a sub-probability short of ``err`` when the recursion pruned),
    acceptance (the true value lies in [acceptance, acceptance + err]), err (pruned mass, 0 when exact).
    estimate: unbiased law and acceptance; err is the acceptance's standard error."""

    law: torch.Tensor
    acceptance: float
    err: float
