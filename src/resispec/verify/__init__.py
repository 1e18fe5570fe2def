"""Stage 4, verification: every verifier, its exact output law and the alpha* bound (docs/verifiers.md).

Pure functions over ``target_probs`` / ``draft_probs``, one module per family, exact laws beside the
samplers; imports nothing else of resispec (the decoding engine and the audit call it).

Public API: ``output_law``, ``acceptance_rate``, ``alpha_star``, ``get_verifier``, ``METHODS``; also
``evaluate`` (law, acceptance and certified error in one call), ``output_law_with_bound`` (pruned history
recursion with a certified error) and ``estimate`` (unbiased sampled-history law and acceptance with a
standard error, for sequoia / resispec on real vocabularies where the exact recursion is out of reach).

Laws are computed in float64 from inputs renormalised to sum 1 (inputs may be off by up to 1e-3).
``ers`` plans (chooses its future reach T) on 128 log-spaced p/q bins when V > 128 and with 8 undamped
iterations (options ``bins``, ``iterations``, ``damping``, ``tol``); the law and the sampler use the same
T, and any T is exact. ``ers``'s "never below specinfer" is guaranteed on the planned (binned) problem.

``optimal`` (optimal.py) selects one candidate by perturbed priority and runs a single-draft speculative
step on it: exact, and its acceptance equals alpha* (it plans in float64 on the full vocabulary, once per
node, O(V log V)).

``replacement=None`` means the method's natural drawing: with replacement for specinfer / ers / resispec /
optimal, without for sequoia. ``specinfer`` with ``replacement=False`` is the greedy plan without
replacement, i.e. ``sequoia``, and ``sequoia`` with ``replacement=True`` is ``specinfer``. ``ers``,
``resispec`` and ``optimal`` are only defined with replacement; ``greedy`` and ``deterministic`` use the
fixed top-k of q (see greedy.py) and take no ``replacement``. ``acceptance_bound`` gives the bound each
method is judged by: alpha* for i.i.d. candidates, ``alpha_star_wor`` (wor_bound.py) without replacement.
"""

from __future__ import annotations

import torch

from .bound import alpha_star, alpha_star_upper_from_beta
from .checks import as_float64, check_num_candidates, check_pair
from .greedy import deterministic_law, greedy_law, top_candidates
from .histories import check_exact
from .optimal import optimal_law
from .resispec import resispec_estimate, resispec_law
from .results import LawResult
from .samplers import VerifyOutcome, get_verifier
from .sequential import sequential_law
from .without_replacement import sequoia_estimate, sequoia_law
from .wor_bound import alpha_star_wor

METHODS = ("specinfer", "sequoia", "ers", "resispec", "optimal", "greedy", "deterministic")
EXACT_METHODS = ("specinfer", "sequoia", "ers", "optimal", "deterministic")

__all__ = [
    "METHODS",
    "EXACT_METHODS",
    "LawResult",
    "VerifyOutcome",
    "acceptance_bound",
    "acceptance_rate",
    "alpha_star",
    "alpha_star_upper_from_beta",
    "alpha_star_wor",
    "estimate",
    "evaluate",
    "get_verifier",
    "output_law",
    "output_law_with_bound",
]


def resolve(method: str, replacement: bool | None) -> str:
    """The law family actually computed for (method, replacement)."""
    if method not in METHODS:
        raise ValueError(f"unknown verification method {method!r}; known: {list(METHODS)}")
    if replacement is None:
        return method
    if not isinstance(replacement, bool):
        raise ValueError(f"replacement must be None, True or False, got {replacement!r}")
    table = {
        ("specinfer", True): "specinfer",
        ("specinfer", False): "sequoia",
        ("sequoia", True): "specinfer",
        ("sequoia", False): "sequoia",
        ("ers", True): "ers",
        ("resispec", True): "resispec",
        ("optimal", True): "optimal",
    }
    if (method, replacement) not in table:
        raise ValueError(f"method {method!r} with replacement={replacement} is not defined")
    return table[(method, replacement)]


def evaluate(
    method,
    target_probs,
    draft_probs,
    num_candidates,
    *,
    replacement=None,
    eps=0.0,
    max_histories=None,
    **options,
) -> LawResult:
    """Law, acceptance and certified error; ``eps`` / ``max_histories`` bound the history recursion."""
    check_pair(target_probs, draft_probs)
    num_candidates = check_num_candidates(num_candidates)
    family = resolve(method, replacement)
    target, draft = as_float64(target_probs, draft_probs)
    if family in ("specinfer", "ers"):
        law, acceptance = sequential_law(family, target, draft, num_candidates, **options)
        return LawResult(law, float(acceptance), 0.0)
    if family in ("greedy", "deterministic", "optimal"):
        if options:
            raise ValueError(f"{family} takes no options, got {sorted(options)}")
        fn = {"greedy": greedy_law, "deterministic": deterministic_law, "optimal": optimal_law}[family]
        law, acceptance = fn(target, draft, num_candidates)
        return LawResult(law, float(acceptance), 0.0)
    if family == "sequoia" and options:
        raise ValueError(f"sequoia takes no options, got {sorted(options)}")
    fn = sequoia_law if family == "sequoia" else resispec_law
    law, acceptance, err = fn(target, draft, num_candidates, eps=eps, max_histories=max_histories, **options)
    return LawResult(law, float(acceptance), float(err))


def estimate(
    method,
    target_probs,
    draft_probs,
    num_candidates,
    *,
    paths=256,
    generator=None,
    replacement=None,
    **options,
) -> LawResult:
    """Like ``evaluate`` but for large vocabularies: sequoia / resispec from ``paths`` sampled rejection
    histories (unbiased law and acceptance; ``err`` is then the acceptance's standard error). Other
    methods are computed exactly (err 0)."""
    check_pair(target_probs, draft_probs)
    num_candidates = check_num_candidates(num_candidates)
    family = resolve(method, replacement)
    if family not in ("sequoia", "resispec"):
        return evaluate(method, target_probs, draft_probs, num_candidates, replacement=replacement, **options)
    if family == "sequoia" and options:
        raise ValueError(f"sequoia takes no options, got {sorted(options)}")
    if generator is None:
        raise ValueError("estimate needs a torch.Generator for sequoia / resispec")
    target, draft = as_float64(target_probs, draft_probs)
    fn = sequoia_estimate if family == "sequoia" else resispec_estimate
    law, acceptance, stderr = fn(target, draft, num_candidates, paths=paths, generator=generator, **options)
    return LawResult(law, acceptance, stderr)


def output_law_with_bound(
    method,
    target_probs,
    draft_probs,
    num_candidates,
    *,
    replacement=None,
    eps=1e-6,
    max_histories=None,
    **options,
) -> tuple[torch.Tensor, float]:
    """(law [V], err): law <= true law entrywise and sum(true law - law) = err (certified)."""
    result = evaluate(
        method,
        target_probs,
        draft_probs,
        num_candidates,
        replacement=replacement,
        eps=eps,
        max_histories=max_histories,
        **options,
    )
    return result.law, result.err


def output_law(method, target_probs, draft_probs, num_candidates, *, replacement=None, **options):
    """Exact float64 law [V] of the token a node emits (ValueError if the recursion would need pruning)."""
    result = evaluate(method, target_probs, draft_probs, num_candidates, replacement=replacement, **options)
    check_exact(result.err, method)
    return result.law


def acceptance_rate(method, target_probs, draft_probs, num_candidates, *, replacement=None, **options):
    """Exact probability that some candidate is accepted."""
    result = evaluate(method, target_probs, draft_probs, num_candidates, replacement=replacement, **options)
    check_exact(result.err, method)
    return result.acceptance


def acceptance_bound(method: str, target_probs, draft_probs, num_candidates: int) -> float:
    """The most any exact verifier can accept with ``method``'s candidates (the bound to judge it by):
    alpha* for k i.i.d. candidates (specinfer, ers, optimal, resispec), alpha*_wor for k drawn without
    replacement (sequoia; k is capped at the number of tokens with q > 0, as no more can be drawn), and
    p(top-k of q) for the fixed candidates of deterministic and greedy."""
    check_pair(target_probs, draft_probs)
    num_candidates = check_num_candidates(num_candidates)
    draws = get_verifier(resolve(method, None)).draws
    if draws == "with_replacement":
        return alpha_star(target_probs, draft_probs, num_candidates)
    if draws == "without_replacement":
        drafted = int((draft_probs > 0).sum())
        return alpha_star_wor(target_probs, draft_probs, min(num_candidates, drafted))
    target, draft = as_float64(target_probs, draft_probs)
    return float(target[top_candidates(draft, num_candidates)].sum())
