"""Bridge from Snakemake `script:` rules to the command line: one code path for both.

A rule's named inputs, outputs and params become `--name value` options of the `resispec` command of
the same name, and the job's log file receives the command's logging.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable


def _options(section: Iterable[tuple[str, object]]) -> list[str]:
    argv = []
    for name, value in section:
        flag = "--" + name.replace("_", "-")
        if isinstance(value, dict):
            argv += [flag, json.dumps(value, sort_keys=True)]
        elif isinstance(value, list | tuple) and not isinstance(value, str):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    return argv


def snakemake_argv(command: str, smk) -> list[str]:
    """Translate a Snakemake job (the `snakemake` object of a script) into `resispec` argv."""
    argv = [command]
    for section in (smk.input, smk.output, smk.params):
        argv += _options(section.items())
    return argv + ["--threads", str(smk.threads)]


def _run(command: str, smk) -> int:
    """`resispec <command>`; a failure's traceback goes to the logging (the job's log file) first."""
    from resispec.workflow.commands import main
    from resispec.workflow.plugins import load_plugins

    try:
        load_plugins(getattr(smk, "config", None) or {})  # the methods a job may be asked to run
        return main(snakemake_argv(command, smk))
    except SystemExit as exc:  # argparse: its message is already on stderr (the log)
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        logging.getLogger(__name__).exception("resispec %s failed", command)
        raise


def run_from_snakemake(command: str, smk) -> None:
    """Run `resispec <command>` for a Snakemake job, logging into the job's first log file (a failing
    step's traceback included)."""
    log_path = smk.log[0] if len(smk.log) else None
    with open(log_path, "a") if log_path else contextlib.nullcontext() as handle:
        if handle is not None:
            root = logging.getLogger()
            for existing in list(root.handlers):
                root.removeHandler(existing)
            logging.basicConfig(
                stream=handle, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
            )
            with contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
                status = _run(command, smk)
        else:
            status = _run(command, smk)
    if status:
        raise SystemExit(f"resispec {command} failed with status {status}; see {log_path}")
