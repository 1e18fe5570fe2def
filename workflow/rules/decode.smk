# Stage 3: the timing pass of every run (a configuration decoded with each of its methods), audit
# logging off, and of every autoregressive baseline (the target alone, once per target, dataset,
# temperature and prompts: the tree and the draft do not change it), which the tables pair by prompt
# with each run that shares it. A timed job takes every local core, so no other job of the workflow
# runs beside it, and uses all of them. Raw per-prompt records are appended to a `.partial` file as
# each prompt finishes, so a killed job resumes where it stopped; the declared output appears only
# when every prompt is done.


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


rule baseline:
    input:
        unpack(baseline_inputs),
    output:
        records=PATHS.baseline(),
    log:
        PATHS.log("baseline", "{baseline}"),
    benchmark:
        PATHS.benchmark("baseline", "{baseline}")
    conda:
        "../../environment.yml"
    threads: timed_threads()
    resources:
        mem_mb=rule_resource("decode", "mem_mb"),
        runtime=rule_resource("decode", "runtime"),
        gpu=gpu_jobs(),
    params:
        job=baseline_json,
        settings=settings_json("decode"),
    script:
        "../scripts/baseline.py"
