"""The full-vocabulary audit (`resispec.audit.full_vocab`): the row codec, exact laws on a real-sized
vocabulary, certified intervals of pruned ResiSpec laws, and the Monte Carlo cross-check of the real
sampler, which must flag a law that is not the sampler's."""

import pytest
import torch
from audit_cases import random_pair

from resispec.audit.full_vocab import MonteCarlo, decode_rows, full_vocab_rows, monte_carlo, wilson
from resispec.decoding.audit_sampling import encode_rows
from resispec.verify import evaluate

MC_DRAWS = 20000  # Wilson 95% half-width <= 0.007 per proportion; one fixed seed


def full_node(method: str, vocab: int, k: int, seed: int = 0) -> dict:
    target, draft = random_pair(vocab, seed)
    target, draft = target.float(), draft.float()
    candidates = torch.multinomial(draft, k, replacement=True, generator=torch.Generator().manual_seed(seed))
    return {
        "method": method,
        "candidates": candidates.tolist(),
        "prompt_id": "p",
        "step": 0,
        "full": encode_rows(target, draft),
    }


def test_rows_round_trip_exactly():
    """Encoded float32 rows decode bit for bit, and take less room than the raw bytes."""
    target, draft = random_pair(5000, seed=1)
    full = encode_rows(target.float(), draft.float())
    back_target, back_draft = decode_rows(full)
    assert torch.equal(back_target, target.float()) and torch.equal(back_draft, draft.float())
    assert len(full["target"]) < 4 * 5000
    with pytest.raises(ValueError, match="codec"):
        decode_rows({**full, "codec": "raw"})


@pytest.mark.parametrize("method", ["specinfer", "ers", "sequoia"])
def test_exact_verifiers_are_exact_on_a_large_vocabulary(method):
    """On 4,096 tokens the exact verifiers' full-vocabulary laws equal p to float64 rounding."""
    rows = full_vocab_rows([full_node(method, 4096, k=2)], max_histories=64)
    assert len(rows) == 1 and rows[0]["scope"] == "full" and rows[0]["vocab"] == 4096
    assert rows[0]["tv_upper"] < 1e-12 + rows[0]["law_err"] and abs(rows[0]["kl"]) < 1e-12


def test_pruned_resispec_law_brackets_the_exact_one():
    """With few histories the certified intervals contain the exact (unpruned) KL and TV."""
    node = full_node("resispec", 40, k=3, seed=2)
    exact = full_vocab_rows([node], max_histories=10**6, eps=0.0)[0]
    pruned = full_vocab_rows([node], max_histories=8)[0]
    assert exact["law_err"] < 1e-12 < pruned["law_err"]
    assert pruned["kl"] - 1e-12 <= exact["kl"] <= pruned["kl_upper"] + 1e-12
    assert pruned["tv"] - 1e-12 <= exact["tv"] <= pruned["tv_upper"] + 1e-12


def test_monte_carlo_agrees_with_the_law_and_flags_a_wrong_one():
    """The real sampler's acceptance and TV_A fall in the recursion's intervals; claiming resispec's
    row for specinfer's law (TV 0) is flagged."""
    node = full_node("resispec", 40, k=3, seed=2)
    generator = torch.Generator().manual_seed(0)
    rows = full_vocab_rows([node], max_histories=10**6, mc=MonteCarlo(1, MC_DRAWS, generator))
    row = rows[0]
    assert row["mc_draws"] == MC_DRAWS and row["mc_consistent"]
    assert row["mc_tv_low"] <= row["tv"] <= row["mc_tv_high"] and row["tv"] > 0.02
    target, draft = (r.double() / r.double().sum() for r in decode_rows(node["full"]))
    law = evaluate("resispec", target, draft, 3).law
    wrong = {**row, "tv": 0.0, "tv_upper": 0.0}
    check = monte_carlo(wrong, node, law > target, draws=MC_DRAWS, generator=torch.Generator().manual_seed(1))
    assert not check["mc_consistent"]


def test_wilson_interval():
    interval = wilson(50, 100)
    assert interval.low < 0.5 < interval.high and interval.high - interval.low == pytest.approx(
        0.19, abs=0.01
    )
    assert wilson(0, 100).low == pytest.approx(0.0, abs=1e-12) and wilson(0, 100).high > 0
