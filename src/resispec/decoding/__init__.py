"""Stage 3, tree decoding: trees, drafters, the target's tree forward, the verification walk, records.

Owns: tree topologies (`trees`, `tree_specs`), tree attention masks and KV-cache cutting
(`tree_attention`, `kv_cache`), static caches and fixed-width masks (`static_cache`), drafters with the
two-method interface (`drafters`), the engine (`engine.generate`, with `target`, `walk`, `phase_timer`
and its per-device options in `compiled`), host-sync counting (`host_syncs`), per-step records
(`records`), the per-run decoding session (`session`) and pair measurements that shape trees (`profile`).
May import: `resispec.verify` (the verifiers it calls), `resispec.models` (loading models and heads).
"""

from resispec.decoding.engine import GenerateOutput, StepRecord, generate

__all__ = ["GenerateOutput", "StepRecord", "generate"]
