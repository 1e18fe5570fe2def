"""``optimal``'s per-node verification planned on the draft's support (``batched_optimal.on_support``):
a draft over a reduced vocabulary (q = 0 off its head) gives the full vocabulary's plan on the support,
the q = 0 tokens' target mass lumped into one entry. Held against ``build_plan`` on the whole vocabulary
(itself held to the LP oracle in ``test_verify_optimal.py``): the same selection law and alpha*, and the
same decisions as the whole-vocabulary per-node verifier from the same seeds."""

from __future__ import annotations

import pytest
import torch

from resispec.verify.batched_optimal import on_support, verify_optimal_per_node
from resispec.verify.optimal import accept_probability, build_plan, select_position
from resispec.verify.rows import draw_rows


def _pair(generator, vocab: int, support: int, zeros: float = 0.2):
    """(p, q) float64 [V]: p with some exact zeros; q on ``support`` random tokens, 0 elsewhere."""
    p = torch.rand(vocab, generator=generator, dtype=torch.float64) ** 3
    p[torch.rand(vocab, generator=generator) < zeros] = 0.0
    p[torch.randint(vocab, (1,), generator=generator)] += 0.01  # never all zero
    q = torch.zeros(vocab, dtype=torch.float64)
    tokens = torch.randperm(vocab, generator=generator)[:support]
    q[tokens] = torch.rand(support, generator=generator, dtype=torch.float64) ** 2 + 1e-3
    return p / p.sum(), q / q.sum()


def _whole_vocabulary(target, draft, candidates, valid, generator):
    """The per-node verifier as it was before the support restriction (the whole vocabulary planned)."""
    accepted = torch.full((target.shape[0],), -1, dtype=torch.long)
    tokens = torch.zeros_like(accepted)
    uniforms = torch.rand(target.shape[0], 2, generator=generator, dtype=torch.float64)
    for row, count in enumerate(valid.sum(-1).tolist()):
        residual = target[row]
        if count:
            plan = build_plan(target[row], draft[row], count)
            cands = candidates[row, :count]
            index = select_position(plan, cands, draft[row][cands] > 0, generator)
            if index is not None:
                accept = accept_probability(target[row, cands[index]], plan.selection[cands[index]])
                if bool(uniforms[row, 0] < accept):
                    accepted[row], tokens[row] = index, cands[index]
                    continue
            residual = (target[row] - plan.selection).clamp_min(0)
        tokens[row] = draw_rows(residual[None], uniforms[row, 1:], target[row : row + 1])[0]
    return accepted, tokens


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
def test_the_same_decisions_from_the_same_seeds(k):
    """Rows of a reduced-vocabulary draft, candidates drawn from q: the support-planned verifier accepts
    the same candidates and draws the same residual tokens as the whole-vocabulary one (2000 nodes)."""
    generator = torch.Generator().manual_seed(k)
    rows, vocab = 2000, 60
    sizes = torch.randint(1, 25, (rows,), generator=generator).tolist()  # draft supports
    pairs = [_pair(generator, vocab, size) for size in sizes]
    target, draft = torch.stack([p for p, _ in pairs]), torch.stack([q for _, q in pairs])  # [B, V]
    candidates = torch.multinomial(draft, k, replacement=True, generator=generator)  # [B, k]
    valid = torch.rand(rows, k, generator=generator) < 0.9
    valid = valid.cumprod(-1).bool()  # a prefix of each row's candidates
    new = verify_optimal_per_node(target, draft, candidates, valid, torch.Generator().manual_seed(5))
    old = _whole_vocabulary(target, draft, candidates, valid, torch.Generator().manual_seed(5))
    assert torch.equal(new.accepted_index, old[0]) and torch.equal(new.token, old[1])
    assert 0.1 < float((old[0] >= 0).double().mean()) < 0.95  # both accepting and rejecting nodes
