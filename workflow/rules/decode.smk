# Stage 3: one decoding job per run (a configuration decoded with each of its methods). Raw
# per-prompt records are appended to a `.partial` file as each prompt finishes, so a killed job
# resumes where it stopped; the declared outputs appear only when every prompt is done.


rule decode:
    input:
        unpack(decode_inputs),
    output:
        records=PATHS.raw(),
        audit=PATHS.audit(),
    log:
        PATHS.log("decode", "{run}"),
    benchmark:
        PATHS.benchmark("decode", "{run}")
    conda:
        "../../environment.yml"
    threads: config["threads"]
    resources:
        mem_mb=rule_resource("decode", "mem_mb"),
        runtime=rule_resource("decode", "runtime"),
    params:
        job=run_json,
        settings=settings_json(),
    script:
        "../scripts/decode.py"
