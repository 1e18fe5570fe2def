"""The registry of verification methods: one ``Method`` object per method, registered once.

A method is what the package compares: a name, whether it claims to be exact, how its candidates are
drawn, its options with their defaults, and two functions,

- ``law(target_probs, draft_probs, k, **options) -> (law, acceptance)``: float64 [V] inputs summing to 1;
  the exact law [V] of the token one node emits and the probability that a candidate is accepted;
- ``verify(target_rows, draft_rows, candidates, valid, generator, **options) -> (accepted, token)``:
  target_rows, draft_rows [B, V]; candidates long [B, k]; valid bool [B, k] (a prefix of each row);
  ``accepted`` long [B] (index into the row's candidates, ``NO_CANDIDATE`` when none is accepted or the
  row has none) and ``token`` long [B] (the accepted candidate, else a residual or bonus draw), without
  reading a device value on the host.

``register(method)`` adds one; every list of methods the package exposes (``resispec.verify.METHODS``,
``EXACT_METHODS``, ...), ``get_verifier``, ``evaluate``, ``acceptance_bound``, the sheet validation and the
report's order read this registry, so a registered method is everywhere a built-in is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from .results import LawResult
from .rows import BatchOutcome
from .samplers import RowVerifier

# how a method's candidates are drawn from q: i.i.d., without replacement, or the fixed top-k of q
DRAWS = ("with_replacement", "without_replacement", "deterministic", "greedy")
NAME_PATTERN = r"[a-z][a-z0-9_-]*"  # no ',' (sheets list methods) nor '+' (the report's derived ids)
BASELINE = "autoregressive"  # the target alone, the baseline of the timing passes, not a verifier
RESERVED = (BASELINE,)


class Method:
    """One verification method (subclass it, set the class attributes, define ``law`` and ``verify``).

    ``exact``: the method claims that the emitted token's law is the target's (``certify`` checks it).
    ``draws``: one of ``DRAWS``; ``replacement`` follows from it (True: i.i.d. from q, False: without
    replacement, None: fixed candidates). ``options``: option name -> default. ``variants``: the method
    computed for an explicit ``replacement`` (e.g. specinfer without replacement is sequoia).
    ``shaping``: its batched ``verify_rows`` reports "budgeting" / "redistribution" / "proxy" phases to a
    timer. ``host_planner``: it plans node by node with host reads, which the engine's level-by-level
    walk uses on a CPU (where host reads block nothing). ``temperature_zero``: the method decodes at
    temperature 0 only (greedy), so it has no law to audit. ``sequential``: candidate i is tried only
    after candidates 1..i-1 were rejected (so per-position counts are sequential trials; optimal selects
    among all k at once). ``depends_on_k``: its decision on candidate i depends on how many candidates
    follow (the pair profile measures it for every child count; the safe default for a new method).
    ``host_verifier``: the verifier a host system ships with (SpecInfer's, Sequoia's, their
    deterministic and greedy variants): a host's rows with it are labelled by the host alone, any
    other method's as "host+method". ``every_run``: decoded in every run besides the sheet's methods
    (the package's exact verifiers). ``beside_note``: not empty for a method of ours that the report
    shows beside the paper's rows, with this note.
    """

    name: str = ""
    exact: bool = False
    draws: str = "with_replacement"
    options: Mapping[str, Any] = {}
    variants: Mapping[bool, str] = {}
    shaping: bool = False
    host_planner: bool = False
    temperature_zero: bool = False
    sequential: bool = True
    depends_on_k: bool = True
    host_verifier: bool = False
    every_run: bool = False
    beside_note: str = ""

    @property
    def replacement(self) -> bool | None:
        return {"with_replacement": True, "without_replacement": False}.get(self.draws)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, exact={self.exact}, draws={self.draws!r})"

    def law(self, target_probs, draft_probs, k: int, **options) -> tuple[torch.Tensor, float]:
        raise NotImplementedError(f"{type(self).__name__}.law is not defined")

    def verify(self, target_rows, draft_rows, candidates, valid, generator, **options) -> BatchOutcome:
        raise NotImplementedError(f"{type(self).__name__}.verify is not defined")

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """``options`` with the defaults filled in; ValueError naming any unknown option."""
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.options))
        if unknown and not self.options:
            raise ValueError(f"unknown {self.name} options {unknown}: {self.name} takes no options")
        if unknown:
            raise ValueError(f"unknown {self.name} options {unknown} (known: {', '.join(self.options)})")
        return {**self.options, **options}

    def evaluate(self, target, draft, k: int, *, eps: float, max_histories, **options) -> LawResult:
        """Law, acceptance and certified error (0: ``law`` is exact); a recursion may prune to ``eps``."""
        law, acceptance = self.law(target, draft, k, **options)
        return LawResult(law, float(acceptance), 0.0)

    def estimate(self, target, draft, k: int, *, paths: int, generator, **options) -> LawResult:
        """A sampled-history estimate for large vocabularies; by default the exact ``evaluate``."""
        return self.evaluate(target, draft, k, eps=0.0, max_histories=None, **options)

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        """What the engine calls: ``tick(phase)`` marks shaping phases, ``host_plan`` allows a per-node
        planner with host reads; the default ignores both and calls ``verify``."""
        return BatchOutcome(*self.verify(target_rows, draft_rows, candidates, valid, generator, **options))

    def node_verifier(self, **options):
        """The per-node sampler (``samplers.Verifier``) the audit's Monte Carlo and the cost profile run;
        by default ``verify`` on one row; ``validate`` (default True) checks its inputs."""
        return RowVerifier(self, **options)


_REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add ``method`` (an instance of a ``Method`` subclass) to the registry; returns it."""
    if not isinstance(method, Method):
        raise TypeError(f"register expects a resispec.verify.Method instance, got {type(method).__name__}")
    name = method.name
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name) or name in RESERVED:
        raise ValueError(f"method name {name!r} must match {NAME_PATTERN} and not be one of {RESERVED}")
    if method.draws not in DRAWS:
        raise ValueError(f"method {name!r}: draws must be one of {DRAWS}, got {method.draws!r}")
    if not isinstance(method.exact, bool):
        raise ValueError(f"method {name!r}: exact must be True or False, got {method.exact!r}")
    if name in _REGISTRY and _REGISTRY[name] is not method:
        raise ValueError(f"a verification method named {name!r} is already registered")
    _REGISTRY[name] = method
    return method


def unregister(name: str) -> None:
    """Remove a registered method (tests, notebooks); unknown names raise like ``get_method``."""
    get_method(name)
    del _REGISTRY[name]


def get_method(name: str) -> Method:
    if name not in _REGISTRY:
        raise ValueError(f"unknown verification method {name!r}; known: {list(_REGISTRY)}")
    return _REGISTRY[name]


def methods() -> tuple[Method, ...]:
    """Every registered method, built-ins first in the report's order, then in registration order."""
    return tuple(_REGISTRY.values())


def names(**properties) -> tuple[str, ...]:
    """Names of the registered methods whose attributes equal ``properties`` (e.g. ``exact=True``)."""
    return tuple(m.name for m in methods() if all(getattr(m, k) == v for k, v in properties.items()))


def method_pattern() -> str:
    """The regular expression of a comma-separated list of registered names (the sheets' ``methods``)."""
    one = "|".join(re.escape(n) for n in names())
    return f"^({one})(,({one}))*$"
