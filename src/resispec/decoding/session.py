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
    return load_model(draft_dir, device=device, dtype=dtype), ready


@dataclass
class DecodeSession:
    job: dict
    settings: dict
    target_model: torch.nn.Module
    draft: object
    tree: object

    @classmethod
    def open(cls, job: dict, settings: dict, target_dir: Path, draft_dir: Path) -> DecodeSession:
        from resispec.decoding.tree_specs import resolve
        from resispec.models.loading import load_model

        device, dtype = settings.get("device", "cpu"), settings.get("dtype", "float32")
        target = load_model(target_dir, device=device, dtype=dtype)
        draft, ready = load_drafter(draft_dir, target, device=device, dtype=dtype)
        tree = resolve(job["tree"], pair_acceptance(job, settings, ready, target, draft, target_dir))
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


def pair_acceptance(job: dict, settings: dict, ready: dict, target, draft, target_dir: Path) -> list | None:
    """The draft's positional acceptance vector against the job's target, for trees that need one
    (Sequoia's): the one its READY.json measured when the draft was trained on this target, else
    measured now on held-out text (a hub draft such as JackFram/llama-68m comes without one)."""
    from resispec.decoding.profile import position_acceptance
    from resispec.decoding.tree_specs import needs_acceptance
    from resispec.models.preparation import heldout_contexts, training_texts

    measured = ready.get("position_acceptance")
    if not needs_acceptance(job["tree"]) or (measured and ready.get("teacher") == job["target"]):
        return measured
    if not isinstance(draft, torch.nn.Module):
        raise ValueError(
            f"tree {job['tree']!r} needs a draft model's acceptance vector; {job['draft']!r} is not one"
        )
    contexts = heldout_contexts(target_dir, training_texts(settings.get("data", {})))
    temperature = float(job["temperature"]) or 1.0
    log.info("measuring %s's acceptance vector against %s (T=%g)", job["draft"], job["target"], temperature)
    return position_acceptance(target, draft, contexts, temperature=temperature)


def _shaping_times(steps) -> dict[str, float]:
    totals: dict[str, float] = {}
    for step in steps:
        for key, value in getattr(step, "shaping_time_s", {}).items():
            totals[key] = totals.get(key, 0.0) + value
    return totals
