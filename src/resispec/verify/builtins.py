"""The built-in verification methods, registered in the report's order. Each family's module holds its
method objects with their exact law, per-node sampler and batched sampler: sequential.py (specinfer, ers),
optimal/ (optimal), resispec.py (resispec), without_replacement.py (sequoia), greedy.py (deterministic,
greedy); their shared bases are in method_base.py.
"""

from __future__ import annotations

from .greedy import Deterministic, Greedy
from .optimal import Optimal
from .registry import register
from .resispec import ResiSpec
from .sequential import ERS, SpecInfer
from .without_replacement import Sequoia

for _method in (SpecInfer, ERS, Optimal, ResiSpec, Sequoia, Deterministic, Greedy):
    register(_method())
