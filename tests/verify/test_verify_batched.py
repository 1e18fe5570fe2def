"""The batched, sync-free verifiers (``verify.batched``) against the per-node reference.

Exact (float64, 1e-12): for every sequential method the batched chain's law given each candidate tuple,
summed over all tuples with their drawing probabilities, equals the method's exact output law
(``output_law``); rows padded to a wider k give the same law as unpadded ones; ``ers``'s batched planning
gives the per-node plan's future reach; ``optimal``'s batched plan gives ``build_plan``'s selection law r.
Statistical (chi-square, significance 1e-3, fixed seeds): the sampled outcomes of ``verify_rows`` against
the exact outcome law of the batched chain (sequential methods) or of the per-node plan (``optimal``).
"""

import itertools

import numpy as np
import pytest
import torch
from optimal_cases import as_pair, selection_probs, small_cases
from scipy.stats import chisquare

from resispec.bench.pairs import zipf_pair
from resispec.verify import output_law
from resispec.verify.batched import acceptance_chain, outcome_law, verify_rows
from resispec.verify.greedy import deterministic_law
from resispec.verify.optimal.batched import plan_rows
from resispec.verify.optimal.law import accept_probability, build_plan
from resispec.verify.sequential import future_for, plan_ers_rows

ALPHA = 1e-3
DRAWS = 4000
VOCAB = 5
SEQUENTIAL = ("specinfer", "ers", "sequoia", "deterministic", "resispec")


def pair(seed: int, vocab: int = VOCAB) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    target = torch.rand(vocab, generator=generator, dtype=torch.float64) ** 3
    draft = torch.rand(vocab, generator=generator, dtype=torch.float64) ** 3
    return target / target.sum(), draft / draft.sum()


def tuples_and_weights(method: str, draft: torch.Tensor, k: int):
    """Every candidate tuple the method's drafter can propose [T, k], with its probability [T]."""
    vocab = draft.shape[0]
    if method == "deterministic":
        return torch.topk(draft, k).indices[None], torch.ones(1, dtype=torch.float64)
    if method == "sequoia":  # without replacement: q(x1) q(x2) / (1 - q(x1)) ...
        tuples = list(itertools.permutations(range(vocab), k))
        weights = []
        for tup in tuples:
            prob, left = 1.0, 1.0
            for token in tup:
                prob, left = prob * float(draft[token]) / left, left - float(draft[token])
            weights.append(prob)
        return torch.tensor(tuples), torch.tensor(weights, dtype=torch.float64)
    tuples = torch.tensor(list(itertools.product(range(vocab), repeat=k)))
    return tuples, draft[tuples].prod(-1)


def reference_law(method, target, draft, k):
    if method == "deterministic":
        return deterministic_law(target, draft, k)[0]
    return output_law(method, target, draft, k)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("method", SEQUENTIAL)
def test_batched_chain_has_the_exact_law(method, k):
    """Summed over candidate tuples, the batched chain's law is the method's exact law (1e-12)."""
    target, draft = pair(10 * k + len(method))
    tuples, weights = tuples_and_weights(method, draft, k)
    rows = len(tuples)
    valid = torch.ones(rows, k, dtype=torch.bool)
    law, _ = outcome_law(method, target.expand(rows, -1), draft.expand(rows, -1), tuples, valid)
    total = (weights[:, None] * law).sum(0)
    torch.testing.assert_close(total, reference_law(method, target, draft, k), atol=1e-12, rtol=0)


@pytest.mark.parametrize("method", SEQUENTIAL)
def test_padding_does_not_change_a_rows_law(method):
    """A node with k candidates padded to a wider row (valid False) has the unpadded law."""
    target, draft = pair(3)
    tuples, _ = tuples_and_weights(method, draft, 2)
    rows = len(tuples)
    padded = torch.cat([tuples, torch.zeros(rows, 2, dtype=torch.long)], dim=1)
    valid = torch.cat([torch.ones(rows, 2, dtype=torch.bool), torch.zeros(rows, 2, dtype=torch.bool)], 1)
    wide, _ = outcome_law(method, target.expand(rows, -1), draft.expand(rows, -1), padded, valid)
    narrow, _ = outcome_law(method, target.expand(rows, -1), draft.expand(rows, -1), tuples, valid[:, :2])
    torch.testing.assert_close(wide, narrow, atol=1e-12, rtol=0)


@pytest.mark.parametrize(("vocab", "bins"), [(6, None), (300, 16), (300, None)])
def test_ers_batched_plan_is_the_per_node_plan(vocab, bins):
    """plan_ers_rows (rows with k = 3 and k = 2 candidates in one batch) = future_for row by row."""
    options = {} if bins is None else {"bins": bins}
    pairs = [pair(seed, vocab) for seed in range(4)]
    target, draft = torch.stack([p for p, _ in pairs]), torch.stack([q for _, q in pairs])
    counts = torch.tensor([3, 2, 3, 1])
    valid = torch.arange(3)[None, :] < counts[:, None]
    future = plan_ers_rows(target, draft, valid, options)
    for row, count in enumerate(counts.tolist()):
        expected = future_for("ers", target[row], draft[row], count, **options)
        torch.testing.assert_close(future[row, :count], expected, atol=1e-12, rtol=0)


def test_optimal_batched_plan_is_the_per_node_plan():
    """plan_rows's selection law r = build_plan's (1e-12) on small cases (many with multi-group
    segments) and on Zipf pairs at V = 2000, several rows with different k in one batch."""
    cases = list(small_cases(seed=5, count=120, vocab_range=(5, 6), k_range=(1, 4)))
    for target, draft, k in cases:
        got = plan_rows(target[None], draft[None], torch.tensor([k]), k).selection[0]
        torch.testing.assert_close(got, build_plan(target, draft, k).selection, atol=1e-12, rtol=0)
    rows = [as_pair(*zipf_pair(2000, torch.Generator().manual_seed(seed))) for seed in range(3)]
    target, draft = torch.stack([p for p, _ in rows]), torch.stack([q for _, q in rows])
    counts = torch.tensor([2, 3, 5])
    got = plan_rows(target, draft, counts, 5).selection
    for row, k in enumerate(counts.tolist()):
        torch.testing.assert_close(
            got[row], build_plan(target[row], draft[row], k).selection, atol=1e-12, rtol=0
        )


def pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    """Chi-square p-value with cells of expected count < 5 pooled."""
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return float(chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue)


def outcome_counts(outcome, k: int, vocab: int) -> np.ndarray:
    """Counts of accepted positions 0..k-1, then of residual tokens 0..V-1."""
    index, token = outcome.accepted_index.numpy(), outcome.token.numpy()
    accepted = np.bincount(index[index >= 0], minlength=k)
    return np.append(accepted, np.bincount(token[index < 0], minlength=vocab))


@pytest.mark.parametrize("method", SEQUENTIAL)
def test_batched_sampler_follows_its_chain(method):
    """verify_rows's outcomes (position accepted, else residual token) on one fixed tuple follow the
    chain's exact conditional law: accept i w.p. prod_{j<i} (1 - a_j) a_i, else the residual."""
    target, draft = pair(7)
    tup = torch.topk(draft, 3).indices if method in ("deterministic", "sequoia") else torch.tensor([1, 1, 3])
    valid = torch.ones(DRAWS, 3, dtype=torch.bool)
    args = (target.expand(DRAWS, -1), draft.expand(DRAWS, -1), tup.expand(DRAWS, -1), valid)
    out = verify_rows(method, *args, torch.Generator().manual_seed(11))
    probs, residual = acceptance_chain(method, *args)
    probs, residual = probs[0], residual[0]
    reach = torch.cumprod(torch.cat([torch.ones(1, dtype=torch.float64), 1 - probs]), 0)
    accepted = reach[:-1] * probs
    _, acceptance = outcome_law(method, *args)
    assert float(acceptance[0]) == pytest.approx(float(accepted.sum()), abs=1e-12)
    expected = np.append(accepted.numpy(), (reach[-1] * residual / residual.sum()).numpy())
    assert pvalue(outcome_counts(out, 3, VOCAB), expected * DRAWS) > ALPHA


def test_batched_optimal_sampler_follows_the_plan():
    """Batched optimal on a multi-group case: selected-and-accepted positions and residual tokens follow
    the per-node plan's exact conditional law (selection_probs x min(1, p / r), then (p - r)^+)."""
    for target, draft, k in small_cases(seed=5, count=200, vocab_range=(5, 6), k_range=(3, 3)):
        plan = build_plan(target, draft, k)
        if any(seg.mass.numel() >= 3 for seg in plan.groups.values()):
            break
    vocab = target.shape[0]
    tup = torch.topk(draft, k).indices.flip(0)
    select = torch.from_numpy(selection_probs(plan, draft.numpy(), tup.numpy()))
    accept = accept_probability(target[tup], plan.selection[tup])
    accepted = select * accept
    residual = (target - plan.selection).clamp_min(0)
    expected = np.append(accepted.numpy(), ((1 - accepted.sum()) * residual / residual.sum()).numpy())
    valid = torch.ones(DRAWS, k, dtype=torch.bool)
    args = (target.expand(DRAWS, -1), draft.expand(DRAWS, -1), tup.expand(DRAWS, -1), valid)
    out = verify_rows("optimal", *args, torch.Generator().manual_seed(5))
    assert pvalue(outcome_counts(out, k, vocab), expected * DRAWS) > ALPHA


def test_greedy_and_leaves():
    """T = 0: the argmax is emitted and accepted at its first position; a row without valid candidates
    (a leaf) draws its bonus token from the target for every method."""
    target, draft = pair(2)
    best = int(target.argmax())
    cands = torch.tensor([[best ^ 1, best, best], [best ^ 1, best ^ 1, best ^ 1]])
    out = verify_rows(
        "greedy", target.expand(2, -1), draft.expand(2, -1), cands, torch.ones(2, 3, dtype=torch.bool), None
    )
    assert out.accepted_index.tolist() == [1, -1] and out.token.tolist() == [best, best]
    for method in (*SEQUENTIAL, "optimal"):
        leaves = torch.zeros(DRAWS, 2, dtype=torch.bool)
        rows = (target.expand(DRAWS, -1), draft.expand(DRAWS, -1), torch.zeros(DRAWS, 2, dtype=torch.long))
        out = verify_rows(method, *rows, leaves, torch.Generator().manual_seed(1))
        assert (out.accepted_index == -1).all()
        counts = np.bincount(out.token.numpy(), minlength=VOCAB)
        assert pvalue(counts, target.numpy() * DRAWS) > ALPHA, method
