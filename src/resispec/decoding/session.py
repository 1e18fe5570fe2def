"""A decoding run's session: the run's models and tree loaded once, then one prompt decoded at a time
into its raw per-prompt record (the workflow writes the records; `resispec.workflow.run_files`).

One pass decodes a run's prompts, the *timing* pass: its records give accepted lengths and throughputs.
On the prompts the exactness audit samples (an ``AuditPlan``), a method with tree nodes also keeps some
of the generation's verified nodes for the audit: the step only copies each visited node's rows, and the
nodes' entries are built after the generation is timed (`resispec.decoding.walk.finish_audit`). Every
record says its pass, whether its generation kept audit rows (``audited``), the device, the dtype, the
host name and the torch thread count it ran with. Method ``autoregressive`` is the target alone
(`resispec.decoding.autoregressive`); it has no tree nodes to audit.
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import dataclass
from pathlib import Path

import torch

from resispec.decoding import autoregressive
from resispec.decoding.audit_sampling import AuditPlan, sample_nodes
from resispec.decoding.records import GenerateOutput
from resispec.decoding.tree_attention import model_dtype

log = logging.getLogger(__name__)
PASS = "timing"  # the records' ``pass``: the one decoding pass (the audit's nodes ride in it)
RECORD_META = ("dataset", "tree", "temperature", "target", "draft")


def check_tokenizers(target_dir: Path, draft_dir: Path) -> None:
    """ValueError naming both directories when the draft's saved tokenizer is not the target's (nothing is
    checked when either carries none, e.g. an EAGLE head, which reads the target's own states)."""
    from resispec.models.loading import tokenizer_mismatch

    if reason := tokenizer_mismatch(target_dir, draft_dir):
        raise ValueError(f"draft {draft_dir} and target {target_dir} do not share one tokenizer: {reason}")


def load_drafter(draft_dir: Path, target_model, *, device: str, dtype: str):
    """The draft of a job: a Hugging Face model, or an EagleDrafter around an EAGLE-1 head; a draft model
    must share the target's vocabulary (`resispec.decoding.arguments.pair_vocabularies`). Check the pair's
    tokenizers (`check_tokenizers`) before loading either model."""
    from resispec.decoding.arguments import pair_vocabularies
    from resispec.models.loading import load_model

    ready = json.loads((draft_dir / "READY.json").read_text())
    if ready.get("kind") == "eagle":
        from resispec.decoding.drafters.eagle import EagleDrafter
        from resispec.models.eagle_head import load_eagle_head

        head = load_eagle_head(draft_dir, target_model).to(device).eval()
        return EagleDrafter(head), ready
    from resispec.decoding.drafters.model_drafter import ModelDrafter

    drafter = ModelDrafter(load_model(draft_dir, device=device, dtype=dtype))  # one drafter per run
    pair_vocabularies(target_model, drafter)
    return drafter, ready


def machine(device: str, model: torch.nn.Module) -> dict:
    """Where a record was measured: the configured device, the dtype the target ran in (config ``auto``
    resolved), the host name and torch's thread count."""
    host = {"hostname": socket.gethostname(), "threads": torch.get_num_threads()}
    return {"device": device, "dtype": dtype_name(model), **host}


def dtype_name(model: torch.nn.Module) -> str:
    """The dtype a model's weights are in, by name ("bfloat16"; `tree_attention.model_dtype`)."""
    return str(model_dtype(model)).removeprefix("torch.")


def _precision(device: str, dtype: str, model: torch.nn.Module) -> str:
    """The log's words for where and in what the models run (config dtype ``auto`` with what it became)."""
    ran = dtype_name(model)
    return f"device {device}, dtype {ran}" + (f" ({dtype})" if dtype != ran else "")


@dataclass
class DecodeSession:
    job: dict
    settings: dict
    target_model: torch.nn.Module
    draft: object
    tree: object

    @classmethod
    def open(
        cls, job: dict, settings: dict, target_dir: Path, draft_dir: Path, profile_path: Path | None = None
    ) -> DecodeSession:
        """Load the run's models on the configured device and resolve its tree (sequoia and auto trees
        from the pair profile at ``profile_path``)."""
        from resispec.decoding.profile import PairProfile
        from resispec.decoding.tree_specs import resolve
        from resispec.models.loading import load_model

        device, dtype = settings.get("device", "cpu"), settings.get("dtype", "float32")
        ready = json.loads((draft_dir / "READY.json").read_text())
        profile = PairProfile.read(profile_path) if profile_path else None
        acceptance, temperature = ready.get("position_acceptance"), float(job["temperature"])
        tree = resolve(job["tree"], acceptance, profile=profile, temperature=temperature)  # before any load
        check_tokenizers(target_dir, draft_dir)
        target = load_model(target_dir, device=device, dtype=dtype)
        draft, _ = load_drafter(draft_dir, target, device=device, dtype=dtype)
        log.info("tree %s: %d nodes; %s", job["tree"], tree.num_nodes, _precision(device, dtype, target))
        return cls(job, settings, target, draft, tree)

    @classmethod
    def target_only(cls, job: dict, settings: dict, target_dir: Path) -> DecodeSession:
        """A session of the target alone (an autoregressive baseline: no draft, no tree)."""
        from resispec.models.loading import load_model

        device, dtype = settings.get("device", "cpu"), settings.get("dtype", "float32")
        target = load_model(target_dir, device=device, dtype=dtype)
        log.info("target alone (autoregressive baseline); %s", _precision(device, dtype, target))
        return cls(job, settings, target, None, None)

    capacity: int | None = None  # the run's static-cache size (``prepare``)

    def prepare(self, prompts: list[dict]) -> None:
        """Size the caches once for the run (its longest prompt plus its generation, the tree on top:
        every prompt then reuses the same caches and graphs, and both passes attend over the same width;
        a baseline's has no tree) and build every compiled graph (``engine.warm_up``, the baseline's
        one-token step) before timing."""
        from resispec.decoding.engine import run_capacity, warm_up

        longest = max(prompts, key=lambda p: len(p["input_ids"]) + int(p["max_new_tokens"]))
        self.capacity = run_capacity([len(longest["input_ids"])], int(longest["max_new_tokens"]), self.tree)
        input_ids = torch.tensor(longest["input_ids"], dtype=torch.long, device=self.device)
        compile_mode = self.settings.get("compile", "auto")
        if self.tree is not None:
            warm_up(
                self.target_model,
                self.draft,
                input_ids,
                tree=self.tree,
                capacity=self.capacity,
                compile_mode=compile_mode,
                temperature=float(self.job["temperature"]),
            )
        if autoregressive.METHOD in self.job.get("methods", []):
            autoregressive.sample(
                self.target_model,
                input_ids,
                max_new_tokens=2,
                eos_token_id=[],
                generator=torch.Generator(device=self.device),
                compile_mode=compile_mode,
                capacity=self.capacity,
            )

    @property
    def device(self) -> str:
        return self.settings.get("device", "cpu")

    def generate(
        self, method: str, prompt: dict, seed: int, *, audit_top: int | None = None
    ) -> GenerateOutput:
        """Decode one prompt with ``method`` from a generator seeded with ``seed``."""
        from resispec.decoding.engine import generate

        generator = torch.Generator(device=self.device).manual_seed(seed)
        input_ids = torch.tensor(prompt["input_ids"], dtype=torch.long, device=self.device)
        temperature, budget = float(self.job["temperature"]), int(prompt["max_new_tokens"])
        if method == autoregressive.METHOD:
            return autoregressive.sample(
                self.target_model,
                input_ids,
                temperature=temperature,
                max_new_tokens=budget,
                generator=generator,
                compile_mode=self.settings.get("compile", "auto"),
                capacity=self.capacity,
            )
        return generate(
            self.target_model,
            self.draft,
            input_ids,
            method=method,
            tree=self.tree,
            temperature=temperature,
            max_new_tokens=budget,
            generator=generator,
            audit_top=audit_top,
            compile_mode=self.settings.get("compile", "auto"),
            capacity=self.capacity,
        )

    def record(self, method: str, prompt: dict, seed: int, output: GenerateOutput, audited: bool) -> dict:
        """The raw per-prompt record of one decoded prompt (docs/architecture.md)."""
        meta = {key: self.job.get(key) for key in RECORD_META}  # a baseline has no draft and no tree
        record = output.to_record(prompt_id=prompt["prompt_id"], method=method, seed=seed, **meta)
        record.update({"pass": PASS, "audited": audited, **machine(self.device, self.target_model)})
        record["shaping_time_s"] = _shaping_times(output.steps)
        return record

    def timing_prompt(
        self, method: str, prompt: dict, seed: int, plan: AuditPlan | None = None
    ) -> tuple[dict, list[dict] | None]:
        """Decode one prompt of the timing pass: its raw record, and with a ``plan`` (a prompt the audit
        samples) the nodes the plan keeps, sampled uniformly along the generation (seeded by ``seed``);
        ``None`` without a plan or for ``autoregressive`` (no tree nodes)."""
        audited = plan is not None and method != autoregressive.METHOD
        top = self.settings.get("audit", {}).get("top_tokens", 256) if audited else None
        output = self.generate(method, prompt, seed, audit_top=top)
        record = self.record(method, prompt, seed, output, audited)
        if not audited:
            return record, None
        entries = [dict(node, step=index) for index, step in enumerate(output.steps) for node in step.audit]
        return record, sample_nodes(entries, plan, seed)


def _shaping_times(steps) -> dict[str, float]:
    totals: dict[str, float] = {}
    for step in steps:
        for key, value in getattr(step, "shaping_time_s", {}).items():
            totals[key] = totals.get(key, 0.0) + value
    return totals
