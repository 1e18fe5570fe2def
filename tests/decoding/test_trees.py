"""Topologies: sizes of the paper's trees, chains, path lists, Sequoia DP against brute force."""

import itertools

import pytest

from resispec.decoding import tree_search, trees


@pytest.mark.parametrize(
    "spec, depth, branch, nodes",
    [("d7b2", 7, 2, 127), ("d5b3", 5, 3, 121), ("d4b5", 4, 5, 156), ("d3b11", 3, 11, 133)],
)
def test_complete_tree_costs_match_table3(spec, depth, branch, nodes):
    tree = trees.complete(depth, branch)
    assert tree.num_nodes == nodes == sum(branch**level for level in range(depth))
    assert tree.depth == depth
    assert trees.parse(spec) == tree
    assert all(len(kids) in (0, branch) for kids in tree.children)
    assert len(tree.levels()[-1]) == branch ** (depth - 1)


def test_chain_and_structure():
    tree = trees.chain(4)
    assert tree.num_nodes == 5 and tree.depth == 5
    assert tree == trees.complete(5, 1) == trees.parse("chain4")
    assert tree.path_to(4) == [0, 1, 2, 3, 4]


def test_ancestor_matrix_matches_paths():
    tree = trees.complete(3, 3)
    anc = tree.ancestor_matrix()
    for node in range(tree.num_nodes):
        assert set(anc[node].nonzero().flatten().tolist()) == set(tree.path_to(node))


def test_from_paths_eagle_style():
    tree = trees.from_paths([[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0]])
    assert tree.num_nodes == 7
    assert tree.children[0] == (1, 2)
    assert [tree.sibling_index[n] for n in tree.children[1]] == [0, 1]
    assert tree.depth == 4
    with pytest.raises(ValueError, match="prefix"):
        trees.from_paths([[0, 0]])
    with pytest.raises(ValueError, match="sibling"):
        trees.from_paths([[1]])


def test_bad_specs_raise():
    with pytest.raises(ValueError, match="tree spec"):
        trees.parse("x7")
    with pytest.raises(ValueError, match="parents"):
        trees.Tree((0, 0))
    with pytest.raises(ValueError, match="breadth-first"):
        trees.Tree((-1, 0, 1, 0))


def _value(structure, acc):
    """Expected committed tokens of a nested-children tree (root counts 1)."""
    return 1.0 + sum(acc[i] * _value(sub, acc) for i, sub in enumerate(structure))


def _all_trees(n, depth, width):
    """Every ordered tree with exactly n nodes, <= depth levels and <= width children per node."""
    if n == 1:
        yield []
        return
    if depth == 1:
        return
    for k in range(1, min(width, n - 1) + 1):
        for sizes in itertools.product(range(1, n), repeat=k):
            if sum(sizes) != n - 1:
                continue
            for subs in itertools.product(*[list(_all_trees(s, depth - 1, width)) for s in sizes]):
                yield list(subs)


@pytest.mark.parametrize("acc", [(0.8, 0.5, 0.2), (0.6, 0.6, 0.1), (0.9, 0.05, 0.0)])
@pytest.mark.parametrize("budget, max_depth", [(5, 3), (7, 4), (8, 3)])
def test_sequoia_dp_is_brute_force_optimum(acc, budget, max_depth):
    tree = tree_search.sequoia(acc, budget, max_depth)
    assert tree.num_nodes <= budget and tree.depth <= max_depth
    value = sum(
        _prod(acc[tree.sibling_index[m]] for m in tree.path_to(node)[1:]) for node in range(tree.num_nodes)
    )
    brute = max(_value(s, acc) for n in range(1, budget + 1) for s in _all_trees(n, max_depth, len(acc)))
    assert value == pytest.approx(brute, abs=1e-9)


def _prod(values):
    out = 1.0
    for v in values:
        out *= v
    return out


def _value_rows(structure, rows):
    """Expected committed tokens when a node with c children weighs them by rows[c - 1]."""
    count = len(structure)
    return 1.0 + sum(rows[count - 1][i] * _value_rows(sub, rows) for i, sub in enumerate(structure))


ROWS = [[0.5, 0.0, 0.0], [0.1, 0.6, 0.0], [0.05, 0.1, 0.7]]  # acceptance moving to later siblings (ers-like)


@pytest.mark.parametrize("budget, max_depth", [(5, 3), (7, 4), (8, 3)])
def test_sequoia_dp_with_per_child_count_acceptance_is_brute_force_optimum(budget, max_depth):
    """With one acceptance vector per child count the DP still finds the best tree of every size."""
    tables = tree_search.sequoia_tables(ROWS, budget, max_depth)
    for nodes in range(1, budget + 1):
        brute = [_value_rows(s, ROWS) for s in _all_trees(nodes, max_depth, 3)]
        if not brute:
            continue
        tree = tree_search.sequoia_tree(tables, nodes, max_depth)
        assert tree.num_nodes == nodes and tree.depth <= max_depth
        assert tables.values[max_depth - 1][nodes] == pytest.approx(max(brute), abs=1e-12)
        nested = _nested(tree, 0)
        assert _value_rows(nested, ROWS) == pytest.approx(max(brute), abs=1e-12)


def _nested(tree, node):
    return [_nested(tree, kid) for kid in tree.children[node]]


def test_acceptance_rows_expand_vectors_and_reject_bad_input():
    assert tree_search.acceptance_rows([0.5, 0.2]).tolist() == [[0.5, 0.0], [0.5, 0.2]]
    with pytest.raises(ValueError, match="positions 0..c-1"):
        tree_search.acceptance_rows([[0.5, 0.1], [0.2, 0.2]])
    with pytest.raises(ValueError, match="square matrix"):
        tree_search.acceptance_rows([[0.5, 0.1, 0.0]])


def test_chain_specs_count_the_root_like_complete_trees():
    """kNdD counts the root as dXbY does (k1d4: 3 drafted levels, like d4b1); kNcL is the other reading,
    L candidate levels under the root (k1c4 = k1d5), kept under its own name."""
    from resispec.decoding.tree_specs import resolve

    assert resolve("k1d4").parents == trees.complete(4, 1).parents
    assert resolve("k1d4").depth == 4 == trees.complete(4, 3).depth
    assert resolve("k1c4").parents == resolve("k1d5").parents == trees.complete(5, 1).parents
    assert resolve("k1c4").name == "k1c4" and resolve("k1d4").name == "k1d4"
    three = resolve("k3c2")
    assert three.num_nodes == 1 + 3 * 2 and three.depth == 3
    assert resolve("k3c2").parents == resolve("k3d3").parents
    with pytest.raises(ValueError, match="kNdD needs"):
        resolve("k2c0")
