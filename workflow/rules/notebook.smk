# Stage 6: the results notebook, executed against this run's tables so that it never goes stale; it
# redraws the main figures (the report rule draws the full set).


rule notebook:
    input:
        tables=expand(PATHS.table(), table=TABLES),
        nodes=[PATHS.exactness(run) for run in RUNS],
    output:
        notebook=f"{PATHS.reports}/results.ipynb",
    log:
        PATHS.log("notebook", "results"),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        source=workflow.source_path("../../notebooks/results.ipynb"),
    script:
        "../scripts/notebook.py"
