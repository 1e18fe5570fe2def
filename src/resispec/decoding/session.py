"""A decoding run's session: the run's models and tree loaded once, then one prompt decoded at a time
into its raw per-prompt record (the workflow writes the records; `resispec.workflow.run_files`)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

log = logging.getLogger(__name__)


def load_drafter(draft_dir: Path, target_model, *, device: str, dtype: str):
    """The draft of a job: a Hugging Face model, or an EagleDrafter around an EAGLE-1 head."""
    from resispec.models.loading import load_model

    ready = json.loads((draft_dir / "READY.json").read_text())
    if ready.get("kind") == "eagle":
        from resispec.decoding.drafters.eagle import EagleDrafter
        from resispec.models.eagle_head import load_eagle_head

        head = load_eagle_head(draft_dir, target_model).to(device).eval()
        return EagleDrafter(head), ready
    from resispec.decoding.drafters.model_drafter import ModelDrafter

    return ModelDrafter(load_model(draft_dir, device=device, dtype=dtype)), ready  # one drafter per run


@dataclass
class DecodeSession:
    job: dict
    settings: dict
    target_model: torch.nn.Module
    draft: object
    tree: object

    @classmethod
    def open(cls, job: dict, settings: dict, target_dir: Path, draft_dir: Path,
             profile_path: Path | None = None) -> DecodeSession:  # fmt: skip
        """Load the run's models on the configured device and resolve its tree (sequoia and auto trees
        from the pair profile at ``profile_path``)."""
        from resispec.decoding.profile import PairProfile
        from resispec.decoding.tree_specs import resolve
        from resispec.models.loading import load_model

        device, dtype = settings.get("device", "cpu"), settings.get("dtype", "float32")
        target = load_model(target_dir, device=device, dtype=dtype)
        draft, ready = load_drafter(draft_dir, target, device=device, dtype=dtype)
        profile = PairProfile.read(profile_path) if profile_path else None
        tree = resolve(job["tree"], ready.get("position_acceptance"), profile=profile,
                       temperature=float(job["temperature"]))  # fmt: skip
        log.info("tree %s: %d nodes; device %s, dtype %s", job["tree"], tree.num_nodes, device, dtype)
        return cls(job, settings, target, draft, tree)

    def decode_prompt(self, method: str, prompt: dict, seed: int, nodes: int) -> tuple[dict, list[dict]]:
        """Decode one prompt with ``method``; returns its raw record and its first ``nodes`` audited
        nodes (each verified node's top-token distributions)."""
        from resispec.decoding.engine import generate

        device = self.settings.get("device", "cpu")
        generator = torch.Generator(device=device).manual_seed(seed)
        job = self.job
        output = generate(
            self.target_model,
            self.draft,
            torch.tensor(prompt["input_ids"], dtype=torch.long, device=device),
            method=method,
            tree=self.tree,
            temperature=float(job["temperature"]),
            max_new_tokens=int(prompt["max_new_tokens"]),
            generator=generator,
            audit_top=self.settings.get("audit", {}).get("top_tokens", 256),
        )
        meta = {key: job[key] for key in ("dataset", "tree", "temperature", "target", "draft")}
        record = output.to_record(prompt_id=prompt["prompt_id"], method=method, seed=seed, **meta)
        record["shaping_time_s"] = _shaping_times(output.steps)
        return record, [node for step in output.steps for node in step.audit][:nodes]


def _shaping_times(steps) -> dict[str, float]:
    totals: dict[str, float] = {}
    for step in steps:
        for key, value in getattr(step, "shaping_time_s", {}).items():
            totals[key] = totals.get(key, 0.0) + value
    return totals
