"""Bridge from Snakemake `script:` rules to the steps: one code path for the workflow and the command line.

A rule's script names its step module (``resispec.workflow.steps.NAME``, the ``resispec NAME``
command); the rule's named inputs, outputs and params become that step's ``--name value`` options,
parsed by the step's own arguments, and the job's log file receives the step's logging. So a rule
reaches the code that does its work in two hops: rule -> script -> step.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from collections.abc import Iterable
from types import ModuleType


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


def command_name(step: ModuleType) -> str:
    """The ``resispec`` command of a step module (``steps.profile_pair`` -> ``profile-pair``)."""
    return step.__name__.rsplit(".", 1)[-1].replace("_", "-")


def _run(step: ModuleType, smk) -> int:
    """The step with the job's options; a failure's traceback goes to the logging (the job's log) first."""
    from resispec.workflow.plugins import load_plugins

    command = command_name(step)
    parser = argparse.ArgumentParser(prog=f"resispec {command}", description=step.HELP)
    step.add_arguments(parser)
    try:
        load_plugins(getattr(smk, "config", None) or {})  # the methods a job may be asked to run
        args = parser.parse_args(snakemake_argv(command, smk)[1:])
        return int(step.run(args) or 0)
    except SystemExit as exc:  # argparse: its message is already on stderr (the log)
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        logging.getLogger(__name__).exception("resispec %s failed", command)
        raise


def run_step(step: ModuleType, smk) -> None:
    """Run a step module (``resispec.workflow.steps.NAME``) for a Snakemake job, logging into the job's
    first log file (a failing step's traceback included)."""
    log_path = smk.log[0] if len(smk.log) else None
    log_format = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    with open(log_path, "a") if log_path else contextlib.nullcontext() as handle:
        if handle is not None:
            root = logging.getLogger()
            for existing in list(root.handlers):
                root.removeHandler(existing)
            logging.basicConfig(stream=handle, level=logging.INFO, format=log_format)
            with contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
                status = _run(step, smk)
        else:
            logging.basicConfig(level=logging.INFO, format=log_format)
            status = _run(step, smk)
    if status:
        raise SystemExit(f"resispec {command_name(step)} failed with status {status}; see {log_path}")
