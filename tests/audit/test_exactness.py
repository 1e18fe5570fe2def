"""Per-node exactness of logged nodes (`resispec.audit.exactness`): exact verifiers at KL ~ 0 on the
reduced vocabulary, the printed ResiSpec measurably off, certified bounds when the recursion prunes."""

import pytest
import torch
from audit_cases import logged_node

from resispec.audit.exactness import exactness_rows, node_exactness, reduced_pair
from resispec.verify import output_law

EXACT = ("specinfer", "ers", "sequoia", "deterministic")


def test_reduced_pair_keeps_top_tokens_and_lumps_the_rest():
    """The reduced vocabulary is the kept tokens plus one remainder token; both laws sum to 1."""
    node = logged_node(vocab=20, top=3)
    target, draft = reduced_pair(node)
    assert len(target) == len(node["tokens"]) + 1
    assert float(target.sum()) == pytest.approx(1.0, abs=1e-15)
    assert float(draft.sum()) == pytest.approx(1.0, abs=1e-15)
    assert float(target[-1]) == pytest.approx(node["target_rest"], abs=1e-12)


@pytest.mark.parametrize("method", EXACT)
@pytest.mark.parametrize("seed", range(5))
def test_exact_verifiers_have_zero_kl_and_respect_alpha_star(method, seed):
    """An exact verifier's law on the reduced vocabulary is the target: KL and TV below 1e-12."""
    row = node_exactness(method, logged_node(vocab=16, k=3, top=5, seed=seed))
    assert abs(row["kl"]) < 1e-12 and row["tv"] < 1e-12 and row["law_err"] == 0.0
    if method in ("specinfer", "ers"):  # alpha* bounds i.i.d. candidates (not sequoia, deterministic)
        assert row["acceptance"] <= row["alpha_star"] + 1e-12


def test_resispec_is_detected_as_inexact():
    """The printed algorithm's law differs from the target on some logged node."""
    rows = [node_exactness("resispec", logged_node(vocab=16, k=3, top=5, seed=s)) for s in range(10)]
    assert max(row["kl"] for row in rows) > 1e-4 and max(row["tv"] for row in rows) > 1e-3


def test_pruned_recursion_gives_certified_intervals():
    """With few histories the law is a sub-probability: its certified KL/TV intervals contain the truth."""
    node = logged_node(vocab=16, k=4, top=6, seed=3)
    full = node_exactness("resispec", node, max_histories=10**6, eps=0.0)
    pruned = node_exactness("resispec", node, max_histories=4, eps=0.0)
    assert full["law_err"] == 0.0 and pruned["law_err"] > 0.0
    assert full["kl"] == full["kl_upper"] and full["tv"] == full["tv_upper"]
    assert pruned["tv"] - 1e-12 <= full["tv"] <= pruned["tv_upper"] + 1e-12
    assert pruned["kl"] - 1e-12 <= full["kl"] <= pruned["kl_upper"] + 1e-12
    assert pruned["kl"] > 2 * pruned["tv"] ** 2  # tighter than Pinsker's bound from the TV lower end
    target, draft = reduced_pair(node)
    law = output_law("resispec", target, draft, 4)
    assert full["tv"] == pytest.approx(0.5 * float((law - target).abs().sum()), abs=1e-12)


def test_rows_skip_leaves_and_methods_without_a_law():
    """Leaves emit from the target (no candidates) and greedy has no sampling law: no rows for them."""
    leaf = logged_node(k=0, step=1, depth=2, prompt_id="p")
    inner = logged_node(k=2, step=1, depth=0, prompt_id="p")
    rows = exactness_rows("specinfer", [leaf, inner])
    assert [row["node"] for row in rows] == [1] and rows[0]["prompt_id"] == "p"
    assert exactness_rows("greedy", [inner]) == []


def test_candidates_are_kept_in_the_logged_node():
    node = logged_node(k=3, seed=1)
    assert len(node["candidates"]) == 3 and all(isinstance(c, int) for c in node["candidates"])
    assert torch.tensor(node["target"]).sum() + node["target_rest"] == pytest.approx(1.0)
