# Stage 6: the paper's numbers against the exact limit: for every ResiSpec accepted length of the paper
# that Table 5's single-candidate number constrains, and for our own Table 5 chain runs against our
# complete trees, the largest accepted length any exact verifier can reach (results/tables/paper_limits.csv).


rule paper_limits:
    input:
        tables=expand(PATHS.table(), table=TABLES),
    output:
        csv=report(
            PATHS.table("paper_limits"),
            caption="../report/paper_limits.rst",
            category="Tables",
            subcategory="paper_limits",
        ),
    log:
        PATHS.log("paper_limits", "paper_limits"),
    benchmark:
        PATHS.benchmark("paper_limits", "paper_limits")
    conda:
        "../../environment.yml"
    threads: 1
    script:
        "../scripts/paper_limits.py"
