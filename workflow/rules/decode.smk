# Stage 3: the timing pass of every run (a configuration decoded with each of its methods, the
# autoregressive baseline included), audit logging off. A timed job takes every local core, so no
# other job of the workflow runs beside it, and uses all of them. Raw per-prompt records are appended
# to a `.partial` file as each prompt finishes, so a killed job resumes where it stopped; the
# declared output appears only when every prompt is done.


rule decode:
    input:
        unpack(decode_inputs),
    output:
        records=PATHS.raw(),
    log:
        PATHS.log("decode", "{run}"),
    benchmark:
        PATHS.benchmark("decode", "{run}")
    conda:
        "../../environment.yml"
    threads: timed_threads()
    resources:
        mem_mb=rule_resource("decode", "mem_mb"),
        runtime=rule_resource("decode", "runtime"),
        gpu=gpu_jobs(),
    params:
        job=run_json,
        settings=settings_json("decode"),
    script:
        "../scripts/decode.py"
