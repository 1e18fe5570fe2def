"""The suite runs on pytest-xdist workers (scripts/test.sh: ``-n 2 --dist loadfile
--no-loadscope-reorder``), one test module per worker at a time, so that module fixtures (a Snakemake run,
a SLURM cluster, a trained tiny model) are built once. The longest modules are scheduled first, so that
the two workers end together. (Modules, not ``xdist_group`` marks: pytest 9.2 identifies a test by a
structured id that pytest-xdist 3.8's ``loadgroup`` no longer renames, so its groups are ignored.)"""

from __future__ import annotations

import pytest

# Longest first (measured in CI conditions: rehearsal 26 min, end-to-end 13, chi-square matrix > 24, SLURM
# 5.5); the rest keep the collection order.
FIRST = (
    "tests/workflow/test_workflow_e2e.py",
    "tests/workflow/test_rehearsal.py",
    "tests/decoding/test_engine_exact.py",
    "tests/workflow/test_slurm.py",
    "tests/workflow/test_interrupt.py",
    "tests/workflow/test_resume_fingerprints.py",
)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        module = _module(item)
        return FIRST.index(module) if module in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: the order inside each module is kept


@pytest.fixture(autouse=True)
def _plugins_forgotten_after_each_test():
    """A test that loads a plugin in this process (``expand_jobs`` on the .test config) leaves the method
    registry as it found it, so no later test on the same worker sees ``first_candidate``."""
    from resispec.workflow import plugins

    before = set(plugins._LOADED)
    yield
    for key in set(plugins._LOADED) - before:
        plugins.forget_plugin(key)
