"""Published facts of the Hugging Face repositories that `config/paper.yaml` names.

The facts live as data in `published_models.yaml` beside this module: per repository its `config.json`,
`generation_config.json` and `tokenizer_config.json` keys, its weight and tokenizer files, and where each
fact comes from (`sources`) or that it could not be checked (`unverified`). The rehearsal stand-ins
(`resispec.models.stand_ins`) publish the same keys with small sizes; the GPU plan reads the real sizes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from types import SimpleNamespace

import yaml

FACTS_FILE = "published_models.yaml"
WEIGHT_LAYOUTS = ("safetensors", "safetensors_sharded", "bin", "bin_sharded", "eagle_bin")


@dataclass(frozen=True)
class PublishedModel:
    """One hub repository as published. `weights` is one of WEIGHT_LAYOUTS; `layout` is `causal_lm` or
    `eagle1` (an EAGLE-1 head: `config.json` + `pytorch_model.bin` with the head's own keys)."""

    repo: str
    config: dict
    generation_config: dict | None
    tokenizer_config: dict | None
    tokenizer_files: tuple[str, ...]
    weights: str
    layout: str = "causal_lm"
    revision: str | None = None
    legacy_rotary_buffers: bool = False
    sources: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()

    def shape(self) -> SimpleNamespace:
        """The config as attributes (what `resispec.models.compute.per_token_macs` reads)."""
        return SimpleNamespace(**self.config)


def _entry(repo: str, raw: dict) -> PublishedModel:
    if raw.get("weights") not in WEIGHT_LAYOUTS:
        raise ValueError(
            f"{FACTS_FILE}: {repo}: weights {raw.get('weights')!r} is not one of {WEIGHT_LAYOUTS}"
        )
    return PublishedModel(
        repo=repo,
        config=dict(raw["config"]),
        generation_config=raw.get("generation_config"),
        tokenizer_config=raw.get("tokenizer_config"),
        tokenizer_files=tuple(raw.get("tokenizer_files", ())),
        weights=raw["weights"],
        layout=raw.get("layout", "causal_lm"),
        revision=raw.get("revision"),
        legacy_rotary_buffers=bool(raw.get("legacy_rotary_buffers", False)),
        sources=tuple(raw.get("sources", ())),
        unverified=tuple(str(item) for item in raw.get("unverified", ())),
    )


@functools.cache
def published_models() -> dict[str, PublishedModel]:
    """Every repository of `published_models.yaml`, by repo id."""
    text = (resources.files("resispec.models") / FACTS_FILE).read_text()
    raw = yaml.safe_load(text)["repositories"]
    return {repo: _entry(repo, entry) for repo, entry in raw.items()}


def published(repo: str) -> PublishedModel:
    """The facts of `repo`; ValueError names the repository and the known ones."""
    models = published_models()
    if repo not in models:
        raise ValueError(
            f"hub repository {repo!r} has no published facts in resispec/models/{FACTS_FILE} "
            f"(known: {', '.join(sorted(models))}); add its config.json keys there"
        )
    return models[repo]
