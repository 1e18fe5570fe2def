"""Tree specs used by the experiment sheets, beyond `trees.parse`: kNdD (N independent chains sharing
the root, D levels counting the root as `dXbY` does: D - 1 candidate levels), kNcL (the other reading
of a chain's depth: N chains of L candidate levels under the root, the same tree as kNd(L+1)),
sequoiaNxD (Sequoia's DP tree from the pair's measured acceptance), auto / auto-<method> (the
hardware-aware tree of `resispec.decoding.auto_tree`) and eagle (EAGLE-1's default 26-node path list).

No spec names a tree of more than ``MAX_NODES`` nodes: ``spec_nodes`` counts a spec's nodes from its
numbers alone (``d40b4`` would be 4 * 10^23 nodes), and ``resolve`` refuses a spec above the cap before
building anything."""

from __future__ import annotations

import re
from collections.abc import Sequence

from resispec.decoding import trees
from resispec.decoding.tree_search import sequoia

# EAGLE-1's default tree for 7B targets (`mc_sim_7b_63` in the EAGLE repository): 25 paths + the root.
EAGLE_PATHS = (
    (0,),
    (1,),
    (2,),
    (3,),
    (0, 0),
    (0, 1),
    (0, 2),
    (1, 0),
    (1, 1),
    (2, 0),
    (2, 1),
    (3, 0),
    (0, 0, 0),
    (0, 0, 1),
    (0, 0, 2),
    (0, 1, 0),
    (0, 1, 1),
    (0, 2, 0),
    (0, 2, 1),
    (1, 0, 0),
    (0, 0, 0, 0),
    (0, 0, 0, 1),
    (0, 0, 0, 2),
    (0, 0, 0, 0, 0),
    (0, 0, 0, 0, 1),
)


def chains(num_chains: int, levels: int, name: str | None = None) -> trees.Tree:
    """`num_chains` independent chains sharing the root, `levels` levels counting the root (as in dXbY:
    `levels - 1` drafted tokens per chain, at most `levels` tokens committed per step)."""
    if num_chains < 1 or levels < 2:
        raise ValueError(f"kNdD needs N >= 1 and D >= 2, got N={num_chains}, D={levels}")
    paths = [(c,) + (0,) * extra for c in range(num_chains) for extra in range(levels - 1)]
    return trees.from_paths(sorted(paths, key=len), name=name or f"k{num_chains}d{levels}")


AUTO = re.compile(r"auto(?:-([a-z_]+))?")  # "auto" (for specinfer) or "auto-<method>"
SEQUOIA = re.compile(r"sequoia(\d+)x(\d+)")
CHAINS = re.compile(r"k(\d+)d(\d+)")  # N chains of D levels counting the root
CHAIN_LEVELS = re.compile(r"k(\d+)c(\d+)")  # N chains of L candidate levels under the root
# Largest tree (nodes, root included) a spec may name. One step verifies every node in one target forward
# (an N x N tree mask, N rows of logits over the vocabulary) and builds the tree's tables in Python, so the
# cost grows with N^2; the sheets' largest trees have 156 nodes (d4b5) and the pair profile times up to 128.
MAX_NODES = 1024
COUNT_BITS = 4096  # complete trees counted exactly up to 2^4096 nodes; beyond, the message says so


def complete_nodes(depth: int, branch: int) -> int | None:
    """Nodes of ``dXbY`` (X levels counting the root, Y children per node) without building it: the sum of
    Y^i for i < X; None when that exceeds 2^COUNT_BITS (too large to be worth writing out)."""
    if branch <= 1:
        return depth if branch == 1 else min(depth, 1)
    if (depth - 1) * branch.bit_length() > COUNT_BITS:
        return None
    return (branch**depth - 1) // (branch - 1)


def spec_nodes(text: str) -> int | None:
    """The node count (root included) a spec names, computed from its numbers without building the tree;
    None for ``auto`` (its size comes from the pair profile, at most ``profile.max_nodes``) and for a spec
    that is not understood; for a complete tree too large to count, ``2**COUNT_BITS + 1``."""
    text = text.strip().lower()
    if m := trees.COMPLETE.fullmatch(text):
        count = complete_nodes(int(m.group(1)), int(m.group(2)))
        return 2**COUNT_BITS + 1 if count is None else count
    if m := trees.CHAIN.fullmatch(text):
        return int(m.group(1)) + 1
    if m := CHAINS.fullmatch(text):
        return int(m.group(1)) * max(int(m.group(2)) - 1, 0) + 1
    if m := CHAIN_LEVELS.fullmatch(text):
        return int(m.group(1)) * int(m.group(2)) + 1
    if m := SEQUOIA.fullmatch(text):
        return int(m.group(1))
    if text == "eagle":
        return len(EAGLE_PATHS) + 1
    return None


def check_nodes(spec: str) -> None:
    """ValueError naming ``spec`` and its node count when it names more than ``MAX_NODES`` nodes."""
    count = spec_nodes(spec)
    if count is None or count <= MAX_NODES:
        return
    counted = f"more than 2^{COUNT_BITS}" if count > 2**COUNT_BITS else f"{count:,}"
    raise ValueError(
        f"tree spec {spec!r}: {counted} nodes, more than the {MAX_NODES} a tree may have "
        "(resispec.decoding.tree_specs.MAX_NODES)"
    )


def profile_methods(spec: str) -> list[str]:
    """The verifiers whose positional acceptance a tree spec needs from the pair profile ([] if none)."""
    text = spec.strip().lower()
    if SEQUOIA.fullmatch(text):
        return ["sequoia"]
    if m := AUTO.fullmatch(text):
        return [m.group(1) or "specinfer"]
    return []


def resolve(
    spec: str, acceptance: Sequence[float] | None = None, *, profile=None, temperature: float = 1.0
) -> trees.Tree:
    """A Tree for any sheet spec. ``sequoiaNxD`` needs an acceptance vector (the pair profile's
    ``sequoia`` row at ``temperature``, else ``acceptance``); ``auto`` / ``auto-<method>`` needs the pair
    profile (``resispec.decoding.profile.PairProfile``): Sequoia's tree that maximises tokens per
    second for that method on the measured hardware (``resispec.decoding.auto_tree``)."""
    check_nodes(spec)
    text = spec.strip().lower()
    if m := CHAINS.fullmatch(text):
        return chains(int(m.group(1)), int(m.group(2)))
    if m := CHAIN_LEVELS.fullmatch(text):  # L candidate levels under the root: kNd(L+1)
        return chains(int(m.group(1)), int(m.group(2)) + 1, name=text)
    if m := SEQUOIA.fullmatch(text):
        if profile is not None:
            acceptance = profile.rows(temperature, "sequoia")
        if not acceptance:
            raise ValueError(f"tree {spec!r} needs the draft's measured acceptance vector")
        return sequoia(acceptance, int(m.group(1)), int(m.group(2)))
    if m := AUTO.fullmatch(text):
        if profile is None:
            raise ValueError(f"tree {spec!r} needs the pair profile (cost profile and acceptance)")
        from resispec.decoding.auto_tree import choose_tree

        method = m.group(1) or "specinfer"
        rows, meta = profile.rows(temperature, method), profile.meta
        chosen = choose_tree(
            rows, profile.costs, method, max_nodes=meta["max_nodes"], max_depth=meta["max_depth"]
        )
        return chosen.tree
    if text == "eagle":
        return trees.from_paths([list(p) for p in EAGLE_PATHS], name="eagle")
    return trees.parse(text)
