# Stage 2: models. `source` models are materialized; `train` drafts are distilled from their target;
# `eagle` heads are trained on their target. The target labels the training chunks once for every model
# trained on it (the shared teacher pass, in `teacher_jobs` parts side by side; temporary files).
# READY.json marks a complete model and holds its metrics.


rule teacher:
    input:
        target=lambda wildcards: PATHS.model(TEACHERS[wildcards.teacher].target),
    output:
        labels=temp(PATHS.teacher()),
    log:
        PATHS.log("teacher", "{teacher}/part{part}"),
    benchmark:
        PATHS.benchmark("teacher", "{teacher}/part{part}")
    priority: TEACHER_PRIORITY
    conda:
        "../../environment.yml"
    threads: config["threads"]
    resources:
        mem_mb=rule_resource("prepare_model", "mem_mb"),
        runtime=rule_resource("prepare_model", "runtime"),
        gpu=gpu_jobs(),
    params:
        labelling=teacher_json,
        settings=settings_json("train_model"),
    script:
        "../scripts/teacher.py"


rule prepare_model:
    input:
        unpack(teacher_inputs),
    output:
        ready=PATHS.model(),
    log:
        PATHS.log("prepare_model", "{model}"),
    benchmark:
        PATHS.benchmark("prepare_model", "{model}")
    priority: model_priority
    conda:
        "../../environment.yml"
    threads: config["threads"]
    resources:
        mem_mb=rule_resource("prepare_model", "mem_mb"),
        runtime=rule_resource("prepare_model", "runtime"),
        gpu=gpu_jobs(),
    params:
        model="{model}",
        spec=lambda wildcards: model_spec(wildcards.model),
        settings=model_settings,
    script:
        "../scripts/prepare_model.py"
