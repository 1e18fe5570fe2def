"""A decoding run's session: models loaded once, (method, prompt) pairs decoded into resumable files."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from resispec.resume import append_line, finalise, read_complete_lines

log = logging.getLogger(__name__)


def load_drafter(draft_dir: Path, target_model, *, device: str, dtype: str):
    """The draft of a job: a Hugging Face model, or an EagleDrafter around an EAGLE-1 head."""
    from resispec.models import load_model

    ready = json.loads((draft_dir / "READY.json").read_text())
    if ready.get("kind") == "eagle":
        from resispec.drafters.eagle import EagleDrafter
        from resispec.eagle_head import load_eagle_head

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
        from resispec.models import load_model
        from resispec.tree_specs import resolve

        device, dtype = settings.get("device", "cpu"), settings.get("dtype", "float32")
        target = load_model(target_dir, device=device, dtype=dtype)
        draft, ready = load_drafter(draft_dir, target, device=device, dtype=dtype)
        tree = resolve(job["tree"], ready.get("position_acceptance"))
        log.info("tree %s: %d nodes; device %s, dtype %s", job["tree"], tree.num_nodes, device, dtype)
        return cls(job, settings, target, draft, tree)

    def resume(self, partial: Path, audit_partial: Path) -> set[tuple[str, str]]:
        """(method, prompt id) pairs already finished; audit lines without a record are dropped."""
        done = {(row["method"], row["prompt_id"]) for row in read_complete_lines(partial)}
        lines = read_complete_lines(audit_partial)
        audited = [row for row in lines if (row["method"], row["prompt_id"]) in done]
        if len(audited) != len(lines):
            audit_partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in audited))
        return done

    def decode_prompt(
        self, method: str, prompt: dict, seed: int, partial: Path, audit_partial: Path, nodes: int
    ) -> None:
        from resispec.engine import generate

        device = self.settings.get("device", "cpu")
        generator = torch.Generator(device=device).manual_seed(seed)
        job = self.job
        output = generate(
            self.target_model,
            self.draft,
            torch.tensor(prompt["input_ids"], dtype=torch.long),
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
        audit = [node for step in output.steps for node in step.audit][:nodes]
        append_line(audit_partial, {"method": method, "prompt_id": prompt["prompt_id"], "nodes": audit})
        append_line(partial, record)  # last: a prompt counts as done only once both lines exist

    def finish(self, prompts, partial: Path, audit_partial: Path, records_out: str, audit_out: str) -> None:
        """Publish records in prompt order and the audit file; remove the partial files."""
        order = {p["prompt_id"]: i for i, p in enumerate(prompts)}
        methods = {m: i for i, m in enumerate(self.job["methods"])}
        key = lambda row: (methods[row["method"]], order[row["prompt_id"]])  # noqa: E731
        rows = sorted(read_complete_lines(partial), key=key)
        audits = sorted(read_complete_lines(audit_partial), key=key)
        nodes = [
            dict(node, method=a["method"], prompt_id=a["prompt_id"]) for a in audits for node in a["nodes"]
        ]
        torch.save({"job": self.job, "nodes": nodes}, audit_out)
        tmp = Path(records_out + ".tmp")
        tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
        finalise(tmp, records_out)
        partial.unlink()
        audit_partial.unlink()
        log.info("wrote %d records and %d audited nodes", len(rows), len(nodes))


def _shaping_times(steps) -> dict[str, float]:
    totals: dict[str, float] = {}
    for step in steps:
        for key, value in getattr(step, "shaping_time_s", {}).items():
            totals[key] = totals.get(key, 0.0) + value
    return totals
