# Stage 6: the results notebook, executed against this run's tables so that it never goes stale; it
# redraws the main figures (the report rule draws the full set). The notebook kept in git is an input,
# named by its path in the repository (relative to the working directory): editing it reruns this rule,
# and nothing recorded for provenance changes from one invocation to the next (`workflow.source_path`
# would name a new temporary copy every time, so every rerun would see "params changed").

NOTEBOOK_SOURCE = os.path.relpath(
    os.path.join(workflow.basedir, "notebooks", "results.ipynb")
)


rule notebook:
    input:
        tables=expand(PATHS.table(), table=TABLES),
        nodes=[PATHS.exactness(run) for run in RUNS],
        source=NOTEBOOK_SOURCE,
    output:
        notebook=f"{PATHS.reports}/results.ipynb",
    log:
        PATHS.log("notebook", "results"),
    benchmark:
        PATHS.benchmark("notebook", "results")
    conda:
        "../../environment.yml"
    threads: 1
    script:
        "../scripts/notebook.py"
