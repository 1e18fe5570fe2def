"""Shared bases of the built-in methods (each family's module subclasses them): ``BuiltIn`` (a family's
per-node sampler class and law function), ``Chained`` (a sequential method sampled from its acceptance
chain, ``rows.sample_chain``) and ``HistoryLaw`` (a law that recurses over rejection histories).
"""

from __future__ import annotations

from .histories import check_exact
from .registry import Method
from .results import LawResult
from .rows import no_tick, sample_chain
from .samplers import Verifier


class BuiltIn(Method):
    """A built-in: ``verify`` is the engine's ``verify_rows`` without a timer; ``node_verifier`` is the
    family's per-node sampler class (``sampler``)."""

    sampler: type = Verifier
    law_of = None  # a family's law function (target, draft, k, **options) -> (law, acceptance), if any

    def law(self, target_probs, draft_probs, k, **options):
        return self.law_of(target_probs, draft_probs, k, **options)

    def verify(self, target_rows, draft_rows, candidates, valid, generator, **options):
        return self.verify_rows(
            target_rows, draft_rows, candidates, valid, generator, options, no_tick, False
        )

    def node_verifier(self, **options):
        validate = options.pop("validate", True)
        return self.sampler(validate=validate, **self.check_options(options))


class Chained(BuiltIn):
    """A sequential method sampled from its acceptance chain (``rows.sample_chain``)."""

    chain = None

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        return sample_chain(self.chain, target_rows, draft_rows, candidates, valid, generator, options, tick)


class HistoryLaw(Chained):
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
