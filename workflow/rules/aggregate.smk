# Stage 5: raw records and exactness results -> one tidy table per paper table/figure, with means and
# bootstrap 95% intervals over prompts (results/tables/{table}.csv).


def table_inputs(wildcards):
    jobs = TABLE_JOBS[wildcards.table]
    return {
        "records": [PATHS.raw(job.run, job.method) for job in jobs],
        "exactness": [PATHS.exactness(job.run, job.method) for job in jobs],
    }


def table_jobs_json(wildcards):
    return json.dumps([job.describe() for job in TABLE_JOBS[wildcards.table]], sort_keys=True)


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
        table="{table}",
        jobs=table_jobs_json,
        settings=settings_json(),
    threads: 1
    script:
        "../scripts/aggregate.py"
