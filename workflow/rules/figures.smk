# Stage 6: figures (PNG and PDF) and LaTeX/HTML tables from the tidy tables.


rule figures:
    input:
        tables=expand(PATHS.table(), table=TABLES),
    output:
        figures=directory(f"{PATHS.reports}/figures"),
        tables=directory(f"{PATHS.reports}/tables"),
    log:
        PATHS.log("figures", "all"),
    params:
        settings=settings_json(),
    threads: 1
    script:
        "../scripts/figures.py"
