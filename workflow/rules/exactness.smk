# Stage 4: exactness audit of every run's audit pass: per sampled node, the exact output law of the
# verifier (resispec.verify) against the target, KL and TV with scipy, acceptance against alpha*, on
# the lumped top-token vocabulary and, for the nodes with full rows, on the full vocabulary (with a
# Monte Carlo cross-check of the real sampler on the runs of audit.monte_carlo_tables); on the runs of
# audit.variant_tables, audit.variant_nodes resispec nodes also get the law of every (budget, order)
# variant of our reading of Algorithm 1 (results/exactness_variants/{run}.csv).


rule exactness:
    input:
        audit=PATHS.audit(),
    output:
        nodes=PATHS.exactness(),
        variants=PATHS.exactness_variants(),
    log:
        PATHS.log("exactness", "{run}"),
    benchmark:
        PATHS.benchmark("exactness", "{run}")
    priority: exactness_priority
    conda:
        "../../environment.yml"
    threads: 1
    params:
        job=run_json,
        settings=settings_json("exactness"),
        monte_carlo_nodes=monte_carlo_nodes,
        variant_nodes=variant_nodes,
    script:
        "../scripts/exactness.py"
