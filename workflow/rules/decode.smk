# Stage 3: the timing pass of every run (a configuration decoded with each of its methods), which also
# keeps the exactness audit's nodes on the prompts the audit samples (the step copies the visited nodes'
# rows; their entries are built after each generation is timed), and of every autoregressive baseline
# (the target alone, once per target, dataset, temperature and prompts: the tree and the draft do not
# change it), which the tables pair by prompt with each run that shares it. A timed job takes every
# local core, so no other job of the workflow runs beside it, and uses all of them. Raw per-prompt
# records are appended to a `.partial` file as each prompt finishes, so a killed job resumes where it
# stopped; the declared outputs appear only when every prompt is done.


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
    priority: TIMED_PRIORITY
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
        full_vocab_nodes=full_vocab_nodes,
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
    priority: TIMED_PRIORITY
    conda:
        "../../environment.yml"
    threads: timed_threads()
    resources:
        mem_mb=rule_resource("decode", "mem_mb"),
        runtime=rule_resource("decode", "runtime"),
        gpu=gpu_jobs(),
    params:
        job=baseline_json,
        settings=settings_json("baseline"),
    script:
        "../scripts/baseline.py"
