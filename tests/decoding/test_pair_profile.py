"""Pair profiles: positional acceptance measured by the samplers, the cost profile, and tree `auto`."""

import math

import pytest
import torch

from resispec.decoding import costs, profile, tree_search, trees
from resispec.decoding.auto_tree import choose_tree
from resispec.decoding.compiled import EngineModes
from resispec.decoding.drafters import ModelDrafter
from resispec.decoding.tree_specs import profile_methods, resolve
from resispec.verify import acceptance_rate

VOCAB = 10


def _distributions(rows: int, seed: int = 0):
    """One "context" of random (target, draft) rows [rows, V], overlapping but different."""
    generator = torch.Generator().manual_seed(seed)
    base = torch.randn(rows, VOCAB, generator=generator)
    target = torch.softmax(base + torch.randn(rows, VOCAB, generator=generator), -1)
    draft = torch.softmax(base + torch.randn(rows, VOCAB, generator=generator), -1)
    return [(target, draft)]


@pytest.mark.parametrize("method, k", [("specinfer", 3), ("sequoia", 3), ("ers", 2)])
def test_acceptance_vector_sums_to_the_exact_acceptance(method, k):
    """sum(u) estimates the mean exact acceptance with k candidates: within 4 standard errors."""
    pairs = _distributions(3000)
    u = profile.acceptance_vector(pairs, method, k=k, seed=1)
    target, draft = pairs[0]
    exact = [acceptance_rate(method, target[i].double(), draft[i].double(), k) for i in range(len(target))]
    mean = sum(exact) / len(exact)
    stderr = math.sqrt(mean * (1 - mean) / len(exact))
    assert len(u) == k and abs(sum(u) - mean) < 4 * stderr, (sum(u), mean, stderr)


def test_plan_dependent_verifiers_get_one_row_per_child_count():
    """ers plans for k candidates: its acceptance is measured for each child count (rows [k, k])."""
    rows = profile.acceptance_rows(_distributions(400), "ers", k=3)
    assert len(rows) == 3 and all(len(r) == 3 for r in rows)
    assert rows[0][1:] == [0.0, 0.0] and rows[1][2] == 0.0
    assert tree_search.acceptance_rows(rows).shape == (3, 3)
    assert len(profile.acceptance_rows(_distributions(50), "specinfer", k=3)) == 3  # a vector


def _costs(per_node: float, per_level: float = 0.0) -> costs.CostProfile:
    nodes = [1, 2, 4, 8, 16, 32, 64]
    return costs.CostProfile(nodes, [1.0 + per_node * n for n in nodes], [0.0, per_level, 0.0, 0.0], {})


def test_cost_profile_interpolates_and_extrapolates():
    profile_costs = _costs(0.1)
    assert profile_costs.target_time(3) == pytest.approx(1.3)
    assert profile_costs.target_time(128) == pytest.approx(1.0 + 0.1 * 128)
    assert profile_costs.draft_time(trees.chain(3)) == 0.0


def test_fitted_draft_model_recovers_a_linear_cost():
    probes = costs.probe_trees()
    truth = [0.5, 2.0, 0.25, 0.125]
    seconds = [sum(c * f for c, f in zip(truth, costs.draft_features(t), strict=True)) for t in probes]
    assert costs.fit_draft_model(probes, seconds) == pytest.approx(truth)


def _tokens_per_second(tree, u, profile_costs):
    value = sum(
        math.prod(u[tree.sibling_index[m]] for m in tree.path_to(node)[1:]) for node in range(tree.num_nodes)
    )
    return value / (profile_costs.target_time(tree.num_nodes) + profile_costs.draft_time(tree))


@pytest.mark.parametrize("per_node, per_level", [(0.0, 0.0), (0.05, 0.2), (2.0, 0.0)])
def test_auto_tree_beats_every_complete_tree_and_chain(per_node, per_level):
    """The chosen tree's predicted tokens/s is at least that of every fixed tree in the same limits."""
    u = [0.6, 0.2, 0.1]
    profile_costs = _costs(per_node, per_level)
    chosen = choose_tree(u, profile_costs, "specinfer", max_nodes=40, max_depth=5)
    assert chosen.tree.num_nodes <= 40 and chosen.tree.depth <= 5
    assert chosen.tokens_per_second == pytest.approx(_tokens_per_second(chosen.tree, u, profile_costs))
    rivals = [trees.chain(n) for n in range(5)] + [trees.complete(d, b) for d in (2, 3) for b in (2, 3)]
    for rival in rivals:
        assert chosen.tokens_per_second >= _tokens_per_second(rival, u, profile_costs) - 1e-12
    if per_node == 2.0:  # verifying a node costs more than a whole step: no speculation pays
        assert chosen.tree.num_nodes == 1


def test_auto_spec_resolves_from_a_profile_and_round_trips(tmp_path):
    pair = profile.PairProfile(
        {"1": {"specinfer": [0.5, 0.2], "sequoia": [0.55, 0.2]}},
        _costs(0.01),
        {"max_nodes": 16, "max_depth": 4},
    )
    path = tmp_path / "profile.json"
    path.write_text(pair.to_json())
    again = profile.PairProfile.read(path)
    assert resolve("auto", profile=again).parents == resolve("auto-specinfer", profile=pair).parents
    assert resolve("sequoia16x4", profile=again).num_nodes <= 16
    assert profile_methods("auto") == ["specinfer"] and profile_methods("auto-ers") == ["ers"]
    assert profile_methods("sequoia64x6") == ["sequoia"] and profile_methods("d4b2") == []
    with pytest.raises(ValueError, match="temperature 0.6, method 'specinfer'"):
        resolve("auto", profile=pair, temperature=0.6)
    with pytest.raises(ValueError, match="needs the pair profile"):
        resolve("auto")


def test_measured_costs_on_tiny_models(target_model, draft_model):
    """Timing helpers run the real engine pieces: positive seconds for every node count and probe."""
    context = torch.randint(1, 12, (20,))
    seconds = costs.target_seconds(target_model, context[:8], [1, 4], repeats=2)
    assert len(seconds) == 2 and min(seconds) > 0
    drafter = ModelDrafter(draft_model)
    assert (
        costs.proposal_seconds(drafter, context, trees.complete(3, 2), draws="with_replacement", repeats=3)
        > 0
    )
    with pytest.raises(ValueError, match="too short"):
        costs.proposal_seconds(drafter, context[:5], trees.chain(2), draws="with_replacement", repeats=3)


def test_the_profile_times_the_engine_that_runs(
    eager_backend, monkeypatch, tmp_path, target_model, draft_model
):
    """The cost profile is measured with the run's compile mode (the target's tree forward and the
    drafter's forwards captured), the verifiers as the engine calls them (``verify_rows``, every row in one
    call in "tree" mode) between synchronisations, and the profile JSON names both modes."""
    from resispec.decoding import pair_profile
    from resispec.verify import batched

    calls, syncs = [], []
    original = batched.verify_rows
    monkeypatch.setattr(
        batched, "verify_rows", lambda *a, **k: calls.append(a[1].shape[0]) or original(*a, **k)
    )
    monkeypatch.setattr(costs, "sync", lambda device: syncs.append(device))
    context = torch.randint(1, 12, (80,), generator=torch.Generator().manual_seed(0))
    settings = {"candidates": 2, "repeats": 2, "max_nodes": 2, "max_depth": 3}
    drafter, methods = ModelDrafter(draft_model), ["specinfer"]

    def measure(modes=None):
        return pair_profile.measure_pair(
            target_model,
            draft_model,
            drafter,
            [context],
            temperatures=[1.0],
            methods=methods,
            settings=settings,
            modes=modes,
        )

    measured = measure(EngineModes("default", "tree"))
    assert eager_backend["stats"]["unique_graphs"] >= 2
    assert calls and max(calls) > 1 and len(syncs) >= 2 * len(calls) - 2  # batched rows, clocks after syncs
    path = tmp_path / "profile.json"
    path.write_text(measured.to_json())
    meta = profile.PairProfile.read(path).meta
    assert (meta["compile_mode"], meta["verify_mode"]) == ("default", "tree")
    eager = measure()
    assert (eager.meta["compile_mode"], eager.meta["verify_mode"]) == ("none", "path")  # a CPU's choices
