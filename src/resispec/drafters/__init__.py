"""Drafters: propose a token tree, update after verification."""

from .base import DRAWS, Drafter, DraftTree, draw_children, process_logits
from .eagle import EagleDrafter
from .model_drafter import ModelDrafter

__all__ = ["DRAWS", "Drafter", "DraftTree", "EagleDrafter", "ModelDrafter", "draw_children", "process_logits"]
