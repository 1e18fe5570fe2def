# Stage 5: raw records and exactness results -> one tidy table per paper table/figure, with means and
# bootstrap 95% intervals over prompts (results/tables/{table}.csv).


def table_inputs(wildcards):
    runs = sorted({job.run for job in TABLE_JOBS[wildcards.table]})
    return {
        "records": [PATHS.raw(run) for run in runs],
        "exactness": [PATHS.exactness(run) for run in runs],
    }


def table_jobs_json(wildcards):
    return json.dumps([dict(job.describe(), run=job.run) for job in TABLE_JOBS[wildcards.table]], sort_keys=True)


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
    params:
        jobs=table_jobs_json,
        settings=settings_json(),
    threads: 1
    script:
        "../scripts/aggregate.py"
