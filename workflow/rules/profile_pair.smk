# Stage 3a: the pair profile, once per (target, draft) on the configured device, for the runs whose
# trees depend on it (sequoiaNxD, auto): positional acceptance per temperature and verifier on held-out
# contexts, and the cost profile (target forward vs tree nodes, proposal cost vs tree shape).


rule profile_pair:
    input:
        target=PATHS.model("{target}"),
        draft=PATHS.model("{draft}"),
    output:
        profile=PATHS.profile(),
    log:
        PATHS.log("profile_pair", "{target}/{draft}"),
    benchmark:
        PATHS.benchmark("profile_pair", "{target}/{draft}")
    priority: TIMED_PRIORITY
    conda:
        "../../environment.yml"
    threads: timed_threads()
    resources:
        # measured on the device decode runs on, with the same models: decode's resources
        mem_mb=rule_resource("decode", "mem_mb"),
        runtime=rule_resource("decode", "runtime"),
        gpu=gpu_jobs(),
    params:
        temperatures=lambda wildcards: pair_needs(wildcards)["temperatures"],
        methods=lambda wildcards: pair_needs(wildcards)["methods"],
        profile_settings=json.dumps(config["profile"], sort_keys=True),
        settings=settings_json("profile_pair"),
    script:
        "../scripts/profile_pair.py"
