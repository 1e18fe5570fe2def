# Stage 5: raw records and exactness results -> one tidy table per paper table/figure, with means and
# bootstrap 95% intervals over prompts (results/tables/{table}.csv).


rule aggregate:
    input:
        unpack(table_inputs),
    output:
        table=report(
            PATHS.table(),
            caption="../report/table.rst",
            category="Tables",
            subcategory="{table}",
        ),
    log:
        PATHS.log("aggregate", "{table}"),
    benchmark:
        PATHS.benchmark("aggregate", "{table}")
    conda:
        "../../environment.yml"
    threads: 1
    params:
        jobs=table_jobs_json,
        settings=settings_json("aggregate"),
    script:
        "../scripts/aggregate.py"
