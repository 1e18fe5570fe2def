"""Tree specs used by the experiment sheets, beyond `trees.parse`: kNdD (N independent chains sharing
the root, D levels counting the root as `dXbY` does: D - 1 candidate levels), kNcL (the other reading
of a chain's depth: N chains of L candidate levels under the root, the same tree as kNd(L+1)),
sequoiaNxD (Sequoia's DP tree from the pair's measured acceptance), auto / auto-<method> (the
hardware-aware tree of `resispec.decoding.auto_tree`) and eagle (EAGLE-1's default 26-node path list)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from resispec.decoding import trees
from resispec.decoding.tree_search import sequoia

# EAGLE-1's default tree for 7B targets (`mc_sim_7b_63` in the EAGLE repository): 25 paths + the root.
EAGLE_PATHS = (
    (0,), (1,), (2,), (3,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
    (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2), (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
)  # fmt: skip


def chains(num_chains: int, levels: int, name: str | None = None) -> trees.Tree:
    """`num_chains` independent chains sharing the root, `levels` levels counting the root (as in dXbY:
    `levels - 1` drafted tokens per chain, at most `levels` tokens committed per step)."""
    if num_chains < 1 or levels < 2:
        raise ValueError(f"kNdD needs N >= 1 and D >= 2, got N={num_chains}, D={levels}")
    paths = [(c,) + (0,) * extra for c in range(num_chains) for extra in range(levels - 1)]
    return trees.from_paths(sorted(paths, key=len), name=name or f"k{num_chains}d{levels}")


AUTO = re.compile(r"auto(?:-([a-z_]+))?")  # "auto" (for specinfer) or "auto-<method>"
SEQUOIA = re.compile(r"sequoia(\d+)x(\d+)")


def profile_methods(spec: str) -> list[str]:
    """The verifiers whose positional acceptance a tree spec needs from the pair profile ([] if none)."""
    text = spec.strip().lower()
    if SEQUOIA.fullmatch(text):
        return ["sequoia"]
    if m := AUTO.fullmatch(text):
        return [m.group(1) or "specinfer"]
    return []


def resolve(spec: str, acceptance: Sequence[float] | None = None, *, profile=None,
            temperature: float = 1.0) -> trees.Tree:  # fmt: skip
    """A Tree for any sheet spec. ``sequoiaNxD`` needs an acceptance vector (the pair profile's
    ``sequoia`` row at ``temperature``, else ``acceptance``); ``auto`` / ``auto-<method>`` needs the pair
    profile (``resispec.decoding.profile.PairProfile``): Sequoia's tree that maximises tokens per
    second for that method on the measured hardware (``resispec.decoding.auto_tree``)."""
    text = spec.strip().lower()
    if m := re.fullmatch(r"k(\d+)d(\d+)", text):
        return chains(int(m.group(1)), int(m.group(2)))
    if m := re.fullmatch(r"k(\d+)c(\d+)", text):  # L candidate levels under the root: kNd(L+1)
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
