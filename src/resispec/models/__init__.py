"""Stage 2, models: model sources, loading, and the models the workflow trains.

Owns: `hf:` / `pypi:` / `local:` / `tiny:` sources materialized into model directories (`sources`,
`tiny`, `preparation`), loading them on a configured device (`loading`), per-token compute
(`compute`), single-candidate acceptance (`acceptance`), draft distillation (`distill`, `draft_init`,
`draft_training`, reduced-vocabulary heads in `reduced_vocab`), the teacher pass shared by the models of
a target (`teacher`, its parts planned in `teacher_parts`), the deterministic training loop with
token and step budgets (`training`) and EAGLE-1 heads (`eagle_head`, `eagle_training`); the published
facts of hub models (`published`, `published_models.yaml`) and the dress rehearsal's stand-ins of them
(`stand_ins`, `stand_in_tokenizer`) in a hand-written Hugging Face cache (`hub_cache`).
May import: `resispec.corpora` (training text). Nothing downstream.
"""

from resispec.models.loading import load_model, load_tokenizer
from resispec.models.sources import materialize, parse_source

__all__ = ["load_model", "load_tokenizer", "materialize", "parse_source"]
