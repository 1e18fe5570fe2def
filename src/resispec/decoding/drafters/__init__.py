"""Drafters: propose a token tree, update after verification."""

from resispec.decoding.drafters.base import (
    DRAWS,
    AcceptedNodes,
    Drafter,
    DraftTree,
    draw_children,
    draw_with_replacement,
    process_logits,
)
from resispec.decoding.drafters.eagle import EagleDrafter
from resispec.decoding.drafters.model_drafter import ModelDrafter

__all__ = [
    "DRAWS",
    "AcceptedNodes",
    "Drafter",
    "DraftTree",
    "EagleDrafter",
    "ModelDrafter",
    "draw_children",
    "draw_with_replacement",
    "process_logits",
]
