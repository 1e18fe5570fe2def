# Stage 2: models. `source` models are materialised; `train` drafts are distilled from their target;
# `eagle` heads are trained on their target. READY.json marks a complete model and holds its metrics.


def teacher_inputs(wildcards):
    spec = config["models"][wildcards.model]
    teacher = (spec.get("train") or spec.get("eagle") or {}).get("target")
    return {"teacher": PATHS.model(teacher)} if teacher else {}


rule prepare_model:
    input:
        unpack(teacher_inputs),
    output:
        ready=PATHS.model(),
    log:
        PATHS.log("prepare_model", "{model}"),
    benchmark:
        PATHS.benchmark("prepare_model", "{model}")
    params:
        model="{model}",
        spec=lambda wildcards: model_spec(wildcards.model),
        settings=settings_json(),
    threads: config["threads"]
    resources:
        gpu=lambda wildcards: model_gpus(wildcards.model),
        mem_mb=config["resources"]["mem_mb"],
        runtime=config["resources"]["runtime"],
    script:
        "../scripts/prepare_model.py"
