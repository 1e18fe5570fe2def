"""Each method's acceptance against its own bound in the per-node audit: alpha* for i.i.d. candidates,
alpha*_wor for sequoia; ``optimal`` attains alpha* on every logged node."""

import pytest
from audit_cases import logged_node

from resispec.audit.aggregate import node_extremes
from resispec.audit.exactness import exactness_rows, node_exactness, reduced_pair
from resispec.verify import alpha_star_wor

EXACT = ("specinfer", "ers", "sequoia", "optimal", "deterministic")


@pytest.mark.parametrize("seed", range(6))
def test_exact_methods_never_exceed_their_own_bound(seed):
    node = logged_node(vocab=24, k=3, top=6, seed=seed)
    for method in EXACT:
        row = node_exactness(method, node)
        assert row["acceptance"] <= row["bound"] + 1e-12, method
        assert abs(row["kl"]) < 1e-12, method


@pytest.mark.parametrize("seed", range(6))
def test_optimal_attains_alpha_star_and_sequoia_is_judged_by_alpha_star_wor(seed):
    node = logged_node(vocab=24, k=3, top=6, seed=seed)
    optimal = node_exactness("optimal", node)
    assert optimal["acceptance"] == pytest.approx(optimal["alpha_star"], abs=1e-12)
    assert optimal["bound"] == optimal["alpha_star"]
    sequoia = node_exactness("sequoia", node)
    assert sequoia["bound"] == pytest.approx(alpha_star_wor(*reduced_pair(node), 3), abs=1e-15)
    assert sequoia["bound"] >= sequoia["alpha_star"] - 1e-12


def test_extremes_report_the_excess_over_the_own_bound():
    nodes = [logged_node(vocab=24, k=3, top=6, seed=s) for s in range(4)]
    rows = exactness_rows("sequoia", nodes)
    extremes = {row["metric"]: row["mean"] for row in node_extremes(rows)}
    assert extremes["max_excess_over_bound"] <= 1e-12
    assert extremes["max_excess_over_bound"] == max(r["acceptance"] - r["bound"] for r in rows)
    assert exactness_rows("optimal", nodes)[0]["bound"] == exactness_rows("optimal", nodes)[0]["alpha_star"]
