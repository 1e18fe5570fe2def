# Stage 3: one decoding job per (sheet row, method). Raw per-prompt records are appended to a
# `.partial` file as each prompt finishes, so a killed job resumes where it stopped; the declared
# output appears only when every prompt is done.


def decode_inputs(wildcards):
    row = run_of(wildcards).row
    return {
        "prompts": PATHS.prompts(row["target"], row["dataset"]),
        "target": PATHS.model(row["target"]),
        "draft": PATHS.model(row["draft"]),
    }


rule decode:
    input:
        unpack(decode_inputs),
    output:
        records=PATHS.raw(),
        audit=PATHS.audit(),
    log:
        PATHS.log("decode", "{run}/{method}"),
    benchmark:
        PATHS.benchmark("decode", "{run}/{method}")
    params:
        job=run_json,
        settings=settings_json(),
    threads: config["threads"]
    resources:
        gpu=lambda wildcards: model_gpus(run_of(wildcards).row["target"]),
        mem_mb=config["resources"]["mem_mb"],
        runtime=config["resources"]["runtime"],
    script:
        "../scripts/decode.py"
