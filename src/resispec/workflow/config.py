"""Workflow configuration: validation against the schema, which is the single source of defaults."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCHEMA_RESOURCE = "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type; the message names the key."""


def schema_path() -> Path:
    """The config schema: `workflow/schemas/config.schema.yaml` in a checkout, else the packaged copy."""
    checkout = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / SCHEMA_RESOURCE
    if checkout.is_file():
        return checkout
    return Path(str(resources.files("resispec") / "data" / SCHEMA_RESOURCE))


def load_schema(path: str | Path | None = None) -> dict[str, Any]:
    return yaml.safe_load(Path(path or schema_path()).read_text())


def validator_with_defaults(validator_class):
    """Extend a jsonschema validator so that validation fills `default`s into the instance."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _key_path(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in allowed)
        if unknown and error.schema.get("additionalProperties") is False:
            return ".".join(filter(None, [path, unknown[0]]))
    return path or "<top level>"


def validate_config(config: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return a validated deep copy of `config` with every default filled in.

    Raises ConfigError naming the offending key (dotted path) on an unknown key or a wrong type.
    """
    schema = dict(schema or load_schema())
    instance = copy.deepcopy(dict(config))
    draft = jsonschema.Draft202012Validator
    validator = validator_with_defaults(draft)(schema, format_checker=draft.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        raise ConfigError(f"config key '{_key_path(error)}': {error.message}")
    return instance


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file and validate it."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config file {path} must hold a mapping, not {type(raw).__name__}")
    return validate_config(raw)


def merge_configs(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`overlay` on top of `base`, nested mappings merged key by key (as Snakemake merges configfiles)."""
    merged = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_configs(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load_configs(paths: list[str | Path]) -> dict[str, Any]:
    """Several YAML config files merged in order (later ones win), then validated: what
    `snakemake --configfile A --configfile B` sees on top of the Snakefile's own configfile."""
    merged: dict[str, Any] = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        raw = yaml.safe_load(path.read_text()) or {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"config file {path} must hold a mapping, not {type(raw).__name__}")
        merged = merge_configs(merged, raw)
    return validate_config(merged)


#: The settings each rule's jobs receive, as dotted keys ("audit.bootstrap": one sub-key). A rule gets only
#: what it uses, so that changing any other setting reruns none of its jobs (Snakemake's params trigger):
#: `threads` reaches no job's settings, `audit.bootstrap` only the aggregation's.
RULE_SETTINGS = {
    "prepare_data": (
        "data.dir",
        "data.num_prompts",
        "data.allow_fewer_prompts",
        "data.prompt_tokens",
        "data.max_new_tokens",
    ),
    "train_model": (
        "device",
        "seed",
        "data.dir",
        "data.datasets",
        "data.num_prompts",
        "data.train_documents",
    ),
    "source_model": (),
    "decode": (
        "device",
        "dtype",
        "compile",
        "seed",
        "testing",
        "audit.top_tokens",
        "audit.max_nodes",
        "audit.nodes_per_prompt",
    ),
    "baseline": ("device", "dtype", "compile", "seed", "testing"),
    "exactness": (
        "seed",
        "audit.max_histories",
        "audit.full_vocab_state_mb",
        "audit.monte_carlo_draws",
    ),
    "aggregate": ("seed", "audit.bootstrap"),
    "profile_pair": (
        "device",
        "dtype",
        "data.dir",
        "data.datasets",
        "data.num_prompts",
        "data.train_documents",
    ),
}


def rule_settings(config: Mapping[str, Any], rule: str) -> dict[str, Any]:
    """The part of a validated config that the jobs of ``rule`` use (``RULE_SETTINGS``)."""
    if rule not in RULE_SETTINGS:
        raise ConfigError(f"rule_settings: unknown rule {rule!r} (known: {sorted(RULE_SETTINGS)})")
    settings: dict[str, Any] = {}
    for key in RULE_SETTINGS[rule]:
        head, _, sub = key.partition(".")
        if sub:
            settings.setdefault(head, {})[sub] = copy.deepcopy(config[head][sub])
        else:
            settings[head] = copy.deepcopy(config[head])
    return settings
