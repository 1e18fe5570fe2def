"""``optimal``'s per-node verification planned on the draft's support (``optimal.batched.on_support``):
a draft over a reduced vocabulary (q = 0 off its head) gives the full vocabulary's plan on the support,
the q = 0 tokens' target mass lumped into one entry. Held against ``build_plan`` on the whole vocabulary
(itself held to the LP oracle in ``test_verify_optimal.py``): the same selection law and alpha*, and the
same decisions as the whole-vocabulary per-node verifier from the same seeds."""

from __future__ import annotations

import pytest
import torch

from resispec.verify.optimal import batched as batched_optimal
from resispec.verify.optimal.batched import on_support, verify_optimal_per_node
from resispec.verify.optimal.law import build_plan


def _pair(generator, vocab: int, support: int, zeros: float = 0.2):
    """(p, q) float64 [V]: p with some exact zeros; q on ``support`` random tokens, 0 elsewhere."""
    p = torch.rand(vocab, generator=generator, dtype=torch.float64) ** 3
    p[torch.rand(vocab, generator=generator) < zeros] = 0.0
    p[torch.randint(vocab, (1,), generator=generator)] += 0.01  # never all zero
    q = torch.zeros(vocab, dtype=torch.float64)
    tokens = torch.randperm(vocab, generator=generator)[:support]
    q[tokens] = torch.rand(support, generator=generator, dtype=torch.float64) ** 2 + 1e-3
    return p / p.sum(), q / q.sum()


def test_the_plan_on_the_support_is_the_whole_vocabularys():
    generator = torch.Generator().manual_seed(11)
    cases = 0
    for _ in range(1500):
        vocab = int(torch.randint(4, 80, (1,), generator=generator))
        support = int(torch.randint(1, vocab // 2 + 1, (1,), generator=generator))
        k = int(torch.randint(1, 6, (1,), generator=generator))
        p, q = _pair(generator, vocab, support)
        tokens, p_s, q_s = on_support(p, q)
        assert tokens is not None and torch.equal(tokens, torch.nonzero(q > 0).flatten())
        full, restricted = build_plan(p, q, k), build_plan(p_s, q_s, k)
        selection = torch.zeros_like(p).index_copy_(0, tokens, restricted.selection[:-1])
        torch.testing.assert_close(selection, full.selection, rtol=0, atol=1e-15)
        assert restricted.selection[-1] == 0  # the lumped q = 0 mass is never selected
        assert abs(restricted.alpha_star - full.alpha_star) <= 1e-15
        cases += 1
    assert cases == 1500


def test_a_draft_over_most_of_the_vocabulary_is_planned_as_it_is():
    p, q = _pair(torch.Generator().manual_seed(2), 40, 30)
    tokens, p_s, q_s = on_support(p, q)
    assert tokens is None and p_s is p and q_s is q


@pytest.mark.parametrize("k", [1, 2, 4])
def test_the_same_decisions_from_the_same_seeds(k, monkeypatch):
    """Rows of a reduced-vocabulary draft, candidates drawn from q: the support-planned verifier accepts
    the same candidates and draws the same residual tokens as the whole-vocabulary one (2000 nodes): the
    same function with ``SUPPORT_SHARE`` 0, which plans every row on the whole vocabulary, as before."""
    generator = torch.Generator().manual_seed(k)
    rows, vocab = 2000, 60
    sizes = torch.randint(1, 25, (rows,), generator=generator).tolist()  # draft supports
    pairs = [_pair(generator, vocab, size) for size in sizes]
    target, draft = torch.stack([p for p, _ in pairs]), torch.stack([q for _, q in pairs])  # [B, V]
    candidates = torch.multinomial(draft, k, replacement=True, generator=generator)  # [B, k]
    valid = torch.rand(rows, k, generator=generator) < 0.9
    valid = valid.cumprod(-1).bool()  # a prefix of each row's candidates
    new = verify_optimal_per_node(target, draft, candidates, valid, torch.Generator().manual_seed(5))
    monkeypatch.setattr(batched_optimal, "SUPPORT_SHARE", 0.0)  # no row is planned on its support
    assert on_support(target[0], draft[0])[0] is None
    old = verify_optimal_per_node(target, draft, candidates, valid, torch.Generator().manual_seed(5))
    assert torch.equal(new.accepted_index, old.accepted_index) and torch.equal(new.token, old.token)
    assert 0.1 < float((old.accepted_index >= 0).double().mean()) < 0.95  # accepting and rejecting nodes
