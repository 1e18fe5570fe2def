# Stage 7: the self-contained HTML report (and PDF where latexmk exists), and the results notebook
# executed against this run's tables so that it never goes stale.


rule notebook:
    input:
        tables=expand(PATHS.table(), table=TABLES),
    output:
        notebook=f"{PATHS.reports}/results.ipynb",
    log:
        PATHS.log("notebook", "results"),
    params:
        source="notebooks/results.ipynb",
        tables_dir=f"{PATHS.results}/tables",
    threads: 1
    script:
        "../scripts/notebook.py"


rule report:
    input:
        tables=expand(PATHS.table(), table=TABLES),
        figures=f"{PATHS.reports}/figures",
        notebook=f"{PATHS.reports}/results.ipynb",
    output:
        html=report(
            PATHS.report_html,
            caption="../report/report.rst",
            category="Report",
        ),
    log:
        PATHS.log("report", "html"),
    params:
        settings=settings_json(),
        run_name=config["run_name"],
        reports_dir=PATHS.reports,
    threads: 1
    script:
        "../scripts/report.py"
