"""Tree specs used by the experiment sheets, beyond `trees.parse`: kNdD (N independent chains of D
levels under the root), sequoiaNxD (Sequoia's DP tree from the draft's measured acceptance vector),
and eagle (EAGLE-1's default 26-node path list)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from resispec.decoding import trees

# EAGLE-1's default tree for 7B targets (`mc_sim_7b_63` in the EAGLE repository): 25 paths + the root.
EAGLE_PATHS = (
    (0,), (1,), (2,), (3,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
    (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2), (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
)  # fmt: skip


def chains(num_chains: int, levels: int) -> trees.Tree:
    """`num_chains` independent chains of `levels` levels (root included) sharing the root."""
    if num_chains < 1 or levels < 2:
        raise ValueError(f"kNdD needs N >= 1 and D >= 2, got N={num_chains}, D={levels}")
    paths = [(c,) + (0,) * extra for c in range(num_chains) for extra in range(levels - 1)]
    return trees.from_paths(sorted(paths, key=len), name=f"k{num_chains}d{levels}")


def needs_acceptance(spec: str) -> bool:
    """True for specs whose tree is built from the draft's acceptance vector (sequoiaNxD)."""
    return re.fullmatch(r"sequoia\d+x\d+", spec.strip().lower()) is not None


def resolve(spec: str, acceptance: Sequence[float] | None = None) -> trees.Tree:
    """A Tree for any sheet spec; sequoia specs need the draft's acceptance vector."""
    text = spec.strip().lower()
    if m := re.fullmatch(r"k(\d+)d(\d+)", text):
        return chains(int(m.group(1)), int(m.group(2)))
    if m := re.fullmatch(r"sequoia(\d+)x(\d+)", text):
        if not acceptance:
            raise ValueError(f"tree {spec!r} needs the draft's measured acceptance vector")
        return trees.sequoia(list(acceptance), int(m.group(1)), int(m.group(2)))
    if text == "eagle":
        return trees.from_paths([list(p) for p in EAGLE_PATHS], name="eagle")
    return trees.parse(text)
