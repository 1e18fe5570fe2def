"""Stage 4, verification: every verifier, its exact output law and the alpha* bound (docs/verifiers.md).

Pure functions over ``target_probs`` / ``draft_probs``, one module per family, exact laws beside the
samplers; imports nothing else of resispec (the decoding engine and the audit call it).

Every method is one ``Method`` object in the registry (registry.py): each built-in is defined in its
family's module with its law, per-node and batched samplers (registered in order by builtins.py), and
``register`` adds one of your own (README, "Your own verifier"); ``certify`` checks that it is what it
claims. ``METHODS``, ``EXACT_METHODS`` and ``VERIFIERS`` are read from the registry on each access.

Public API: ``output_law``, ``acceptance_rate``, ``alpha_star``, ``get_verifier``, ``METHODS``; also
``evaluate`` (law, acceptance and certified error in one call), ``output_law_with_bound`` (pruned history
recursion with a certified error) and ``estimate`` (unbiased sampled-history law and acceptance with a
standard error, for sequoia / resispec on real vocabularies where the exact recursion is out of reach).

Laws are computed in float64 from inputs renormalised to sum 1 (inputs may be off by up to 1e-3).
``ers`` plans (chooses its future reach T) on 128 log-spaced p/q bins when V > 128 and with 8 undamped
iterations (options ``bins``, ``iterations``, ``damping``, ``tol``); the law and the sampler use the same
T, and any T is exact. ``ers``'s "never below specinfer" is guaranteed on the planned (binned) problem.

``optimal`` (optimal/) selects one candidate by perturbed priority and runs a single-draft speculative
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

from . import builtins  # noqa: F401  (registers the built-in methods)
from .bound import alpha_star, alpha_star_upper_from_beta
from .certify import Certificate, bound_for, certify
from .checks import as_float64, check_num_candidates, check_pair
from .histories import check_exact
from .registry import Method, get_method, names, register, unregister
from .results import LawResult
from .rows import NO_CANDIDATE
from .samplers import VerifyOutcome
from .wor_bound import alpha_star_wor

__all__ = [
    "METHODS",
    "EXACT_METHODS",
    "NO_CANDIDATE",
    "Certificate",
    "LawResult",
    "Method",
    "VerifyOutcome",
    "acceptance_bound",
    "acceptance_rate",
    "alpha_star",
    "alpha_star_upper_from_beta",
    "alpha_star_wor",
    "certify",
    "estimate",
    "evaluate",
    "get_method",
    "get_verifier",
    "output_law",
    "output_law_with_bound",
    "register",
    "unregister",
]


def __getattr__(name: str):
    """The lists of methods, read from the registry: ``METHODS`` (all), ``EXACT_METHODS`` (those claiming
    exactness) and ``VERIFIERS`` (name -> per-node sampler factory)."""
    if name == "METHODS":
        return names()
    if name == "EXACT_METHODS":
        return names(exact=True)
    if name == "VERIFIERS":
        return {n: get_method(n).node_verifier for n in names()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_verifier(method: str, **options):
    """Per-node sampler of ``method``; options: validate=True and the method's own (ers iterations /
    damping / tol / bins, resispec budget / order)."""
    return get_method(method).node_verifier(**options)


def resolve(method: str, replacement: bool | None) -> Method:
    """The method actually computed for (method, replacement): e.g. specinfer without replacement is
    sequoia (``Method.variants``)."""
    entry = get_method(method)
    if replacement is None:
        return entry
    if not isinstance(replacement, bool):
        raise ValueError(f"replacement must be None, True or False, got {replacement!r}")
    if replacement == entry.replacement:
        return entry
    if replacement not in entry.variants:
        raise ValueError(f"method {method!r} with replacement={replacement} is not defined")
    return get_method(entry.variants[replacement])


def _checked_call(method, target_probs, draft_probs, num_candidates, replacement, options):
    """A law call's checks: the pair, the number of candidates, the method (and its variant for
    ``replacement``) and its options; returns (method object, k, options with defaults)."""
    check_pair(target_probs, draft_probs)
    num_candidates = check_num_candidates(num_candidates)
    entry = resolve(method, replacement)
    return entry, num_candidates, entry.check_options(options)


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
    entry, num_candidates, options = _checked_call(
        method, target_probs, draft_probs, num_candidates, replacement, options
    )
    target, draft = as_float64(target_probs, draft_probs)
    return entry.evaluate(target, draft, num_candidates, eps=eps, max_histories=max_histories, **options)


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
    entry, num_candidates, options = _checked_call(
        method, target_probs, draft_probs, num_candidates, replacement, options
    )
    if type(entry).estimate is Method.estimate:
        return evaluate(method, target_probs, draft_probs, num_candidates, replacement=replacement, **options)
    if generator is None:
        raise ValueError(f"estimate needs a torch.Generator for {entry.name}")
    target, draft = as_float64(target_probs, draft_probs)
    return entry.estimate(target, draft, num_candidates, paths=paths, generator=generator, **options)


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
    return bound_for(get_method(method).draws, target_probs, draft_probs, num_candidates)
