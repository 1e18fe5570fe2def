# Stage 1: corpora -> prompt files, one JSONL per (target tokenizer, dataset). The local corpus file is
# an input: fixing it rebuilds the prompts and every run on them.


rule prepare_data:
    input:
        unpack(corpus_input),
        model=PATHS.model("{target}"),
    output:
        prompts=PATHS.prompts(),
    log:
        PATHS.log("prepare_data", "{target}/{dataset}"),
    benchmark:
        PATHS.benchmark("prepare_data", "{target}/{dataset}")
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset="{dataset}",
        settings=settings_json("prepare_data"),
    script:
        "../scripts/prepare_data.py"
