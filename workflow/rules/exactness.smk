# Stage 4: exactness audit of every decoding job: per verified node, the exact output law of the
# verifier (resispec.verify) against the target, KL and TV with scipy, acceptance against alpha*.


rule exactness:
    input:
        audit=PATHS.audit(),
    output:
        nodes=PATHS.exactness(),
    log:
        PATHS.log("exactness", "{run}"),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        job=run_json,
        settings=settings_json(),
    script:
        "../scripts/exactness.py"
