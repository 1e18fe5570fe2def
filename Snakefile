# resispec-repro: reproduces every table and figure of the ResiSpec paper, plus an exactness audit.
# Run `snakemake --cores N` (embedded CPU default), or add `--configfile config/paper.yaml`.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/prepare_data.smk"
include: "workflow/rules/prepare_model.smk"
include: "workflow/rules/profile_pair.smk"
include: "workflow/rules/decode.smk"
include: "workflow/rules/exactness.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/paper_limits.smk"
include: "workflow/rules/notebook.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
