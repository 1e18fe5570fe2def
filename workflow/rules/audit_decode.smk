# Stage 3b: the audit pass of every run: only the prompts the exactness audit samples, decoded again
# from the timing pass's seeds with audit logging on; keeps sampled nodes (top-token distributions, and
# full-vocabulary rows for a few) and the pass's own raw records. Not timed, so it may run beside other
# jobs; resumable like the timing pass.


rule audit_decode:
    input:
        unpack(decode_inputs),
    output:
        records=PATHS.audit_records(),
        audit=PATHS.audit(),
    log:
        PATHS.log("audit_decode", "{run}"),
    benchmark:
        PATHS.benchmark("audit_decode", "{run}")
    conda:
        "../../environment.yml"
    threads: config["threads"]
    resources:
        # the same models on the same device as the timing pass: decode's resources
        mem_mb=rule_resource("decode", "mem_mb"),
        runtime=rule_resource("decode", "runtime"),
        gpu=gpu_jobs(),
    params:
        job=run_json,
        settings=settings_json("audit_decode"),
        full_vocab_nodes=full_vocab_nodes,
    script:
        "../scripts/audit_decode.py"
