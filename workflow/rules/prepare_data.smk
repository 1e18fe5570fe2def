# Stage 1: corpora -> prompt files, one JSONL per (target tokenizer, dataset).


rule prepare_data:
    input:
        model=PATHS.model("{target}"),
    output:
        prompts=PATHS.prompts(),
    log:
        PATHS.log("prepare_data", "{target}/{dataset}"),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset="{dataset}",
        settings=settings_json("prepare_data"),
    script:
        "../scripts/prepare_data.py"
