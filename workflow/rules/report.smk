# Stage 7: the report: LaTeX and HTML tables (paper value, ours with 95% CI, ratio), figures (PNG and
# PDF), the self-contained report.html and report.pdf (when latexmk exists).


# `resispec info`: the run's hardware and versions, one record per run_name; made again when its key
# (run name, device, dtype, host, versions: resispec.workflow.steps.info.record_key) changes, as params.
rule info:
    output:
        out=PATHS.environment(config["run_name"]),
    log:
        PATHS.log("info", config["run_name"]),
    benchmark:
        PATHS.benchmark("info", config["run_name"])
    conda:
        "../../environment.yml"
    threads: 1
    params:
        run=record_key(config),
    script:
        "../scripts/info.py"


rule report:
    input:
        tables=expand(PATHS.table(), table=TABLES),
        paper_limits=PATHS.table("paper_limits"),
        nodes=[PATHS.exactness(run) for run in RUNS],
        variants=[PATHS.exactness_variants(run) for run in RUNS],
        environment=PATHS.environment(config["run_name"]),
        models=used_models(),
        notebook=f"{PATHS.reports}/results.ipynb",
    output:
        html=report(
            PATHS.report_html, caption="../report/report.rst", category="Report"
        ),
        figures=report(
            directory(f"{PATHS.reports}/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
        latex_tables=report(
            directory(f"{PATHS.reports}/tables"),
            patterns=["{name}.html"],
            caption="../report/paper_table.rst",
            category="Paper tables",
        ),
    log:
        PATHS.log("report", "html"),
    benchmark:
        PATHS.benchmark("report", "html")
    conda:
        "../../environment.yml"
    threads: 1
    params:
        # one caption per figure and paper table (resispec.report.captions): the caption templates of
        # the outputs above pick theirs by name, and report.html shows the same text
        captions=read_captions(),
        config=lambda wildcards: json.dumps(
            {
                k: config[k]
                for k in (
                    "run_name",
                    "device",
                    "dtype",
                    "seed",
                    "data",
                    "models",
                    "report",
                )
            }
        ),
    script:
        "../scripts/report.py"
