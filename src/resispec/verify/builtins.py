"""The built-in verification methods, each one ``registry.Method`` object: its exact law (the family
module: sequential.py, without_replacement.py, resispec.py, optimal.py, greedy.py), its batched sampler
(batched.py, batched_optimal.py) and its per-node sampler (samplers.py), registered in the report's order.
"""

from __future__ import annotations

from . import batched, samplers
from .batched_optimal import verify_optimal_per_node, verify_optimal_rows
from .greedy import deterministic_law, greedy_law
from .histories import check_exact
from .optimal import optimal_law
from .registry import Method, register
from .resispec import resispec_estimate, resispec_law
from .results import LawResult
from .rows import leaf_outcome
from .sequential import DEFAULT_BINS, DEFAULT_DAMPING, DEFAULT_ITERATIONS, DEFAULT_TOL, sequential_law
from .without_replacement import sequoia_estimate, sequoia_law


def _specinfer_chain(target, draft, candidates, valid, options, tick):
    """specinfer's chain: the greedy plan (future reach T = 0)."""
    return batched.sequential_chain(target, draft, candidates, valid, None, tick)


def _ers_chain(target, draft, candidates, valid, options, tick):
    """ers's chain: the future reach planned per row (``plan_ers_rows``)."""
    future = batched.plan_ers_rows(target, draft, valid, options, tick)
    return batched.sequential_chain(target, draft, candidates, valid, future, tick)


class _BuiltIn(Method):
    """A built-in: ``verify`` is the engine's ``verify_rows`` without a timer; ``node_verifier`` is the
    method's class in samplers.py (``sampler``)."""

    sampler: type = samplers.Verifier
    law_of = None  # a family's law function (target, draft, k, **options) -> (law, acceptance), if any

    def law(self, target_probs, draft_probs, k, **options):
        return self.law_of(target_probs, draft_probs, k, **options)

    def verify(self, target_rows, draft_rows, candidates, valid, generator, **options):
        return self.verify_rows(
            target_rows, draft_rows, candidates, valid, generator, options, batched.no_tick, False
        )

    def node_verifier(self, **options):
        validate = options.pop("validate", True)
        return self.sampler(validate=validate, **self.check_options(options))


class _Chained(_BuiltIn):
    """A sequential method sampled from its acceptance chain (``batched.sample_chain``)."""

    chain = None

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        return batched.sample_chain(
            self.chain, target_rows, draft_rows, candidates, valid, generator, options, tick
        )


class _HistoryLaw(_Chained):
    """A method whose law is a recursion over rejection histories (``history_law``), pruned to ``eps``."""

    history_law = None
    history_estimate = None

    def evaluate(self, target, draft, k, *, eps, max_histories, **options) -> LawResult:
        law, acceptance, err = self.history_law(
            target, draft, k, eps=eps, max_histories=max_histories, **options
        )
        return LawResult(law, float(acceptance), float(err))

    def estimate(self, target, draft, k, *, paths, generator, **options) -> LawResult:
        law, acceptance, stderr = self.history_estimate(
            target, draft, k, paths=paths, generator=generator, **options
        )
        return LawResult(law, acceptance, stderr)

    def law(self, target_probs, draft_probs, k, **options):
        result = self.evaluate(target_probs, draft_probs, k, eps=0.0, max_histories=None, **options)
        check_exact(result.err, self.name)
        return result.law, result.acceptance


class _Sequential(_Chained):
    """A with-replacement plan c_i = min(R_i q, (M_i - q T_{i+1})^+) (sequential.py)."""

    def law(self, target_probs, draft_probs, k, **options):
        return sequential_law(self.name, target_probs, draft_probs, k, **options)


class SpecInfer(_Sequential):
    """SpecInfer's multi-round rejection sampling: the greedy plan, candidates i.i.d. from q."""

    name, exact, draws = "specinfer", True, "with_replacement"
    depends_on_k, host_verifier = False, True
    variants = {False: "sequoia"}
    chain = staticmethod(_specinfer_chain)
    sampler = samplers.SpecInferVerifier


class ERS(_Sequential):
    """Shaped residuals: the plan's future reach T chosen by fixed-point iterations (sequential.py)."""

    name, exact, draws, shaping = "ers", True, "with_replacement", True
    every_run = True
    options = {
        "iterations": DEFAULT_ITERATIONS,
        "damping": DEFAULT_DAMPING,
        "tol": DEFAULT_TOL,
        "bins": DEFAULT_BINS,
    }
    chain = staticmethod(_ers_chain)
    sampler = samplers.ERSVerifier


class Optimal(_BuiltIn):
    """Perturbed-priority selection then a single-draft step (optimal.py): exact, attains alpha*."""

    name, exact, draws, host_planner = "optimal", True, "with_replacement", True
    sequential, every_run = False, True
    beside_note = "not in the paper: our optimal exact verifier (attains alpha* at every node)"
    sampler = samplers.OptimalVerifier
    law_of = staticmethod(optimal_law)

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        if candidates.shape[1] == 0:
            return leaf_outcome(target_rows, generator)
        if host_plan:
            return verify_optimal_per_node(target_rows, draft_rows, candidates, valid, generator)
        return verify_optimal_rows(target_rows, draft_rows, candidates, valid, generator, tick)


class ResiSpec(_HistoryLaw):
    """The paper's Algorithm 1 as printed (resispec.py): not exact."""

    name, exact, draws, shaping = "resispec", False, "with_replacement", True
    depends_on_k = False
    options = {"budget": "local", "order": "decreasing_q"}
    chain = staticmethod(batched.resispec_chain)
    sampler = samplers.ResiSpecVerifier
    history_law = staticmethod(resispec_law)
    history_estimate = staticmethod(resispec_estimate)


class Sequoia(_HistoryLaw):
    """Recursive rejection sampling without replacement (without_replacement.py)."""

    name, exact, draws = "sequoia", True, "without_replacement"
    depends_on_k, host_verifier = False, True
    variants = {True: "specinfer"}
    chain = staticmethod(batched.sequoia_chain)
    sampler = samplers.SequoiaVerifier
    history_law = staticmethod(sequoia_law)
    history_estimate = staticmethod(sequoia_estimate)


class Deterministic(_Chained):
    """EAGLE-2's verification of fixed drafts, the top-k of q (greedy.py)."""

    name, exact, draws = "deterministic", True, "deterministic"
    depends_on_k, host_verifier = False, True
    chain = staticmethod(batched.deterministic_chain)
    sampler = samplers.DeterministicVerifier
    law_of = staticmethod(deterministic_law)


class Greedy(_BuiltIn):
    """Temperature 0: the emitted token is argmax p, a candidate is accepted iff it is that token."""

    name, exact, draws, temperature_zero = "greedy", False, "greedy", True
    depends_on_k, host_verifier = False, True
    sampler = samplers.GreedyVerifier
    law_of = staticmethod(greedy_law)

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        return batched.greedy_rows(target_rows, draft_rows, candidates, valid, generator)


for _method in (SpecInfer, ERS, Optimal, ResiSpec, Sequoia, Deterministic, Greedy):
    register(_method())
