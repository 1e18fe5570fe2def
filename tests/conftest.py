"""The suite runs on pytest-xdist workers (scripts/test.sh: ``-n 2 --dist loadgroup``), one test module
per worker at a time, so that module and session fixtures (a Snakemake run, a SLURM cluster, a trained
tiny model) are built once. The end-to-end tests and the SLURM test share one group: the SLURM run is
compared with the session's local run of the `.test` workflow (tests/workflow/conftest.py), which is
built once for both. The longest modules are scheduled first, so that the two workers end together."""

from __future__ import annotations

import pytest

# Modules that share a session fixture: one xdist group (one worker).
SHARED_GROUPS = {
    "tests/workflow/test_workflow_e2e.py": "local-test-run",
    "tests/workflow/test_slurm.py": "local-test-run",
}
# Longest first (measured on 2 cores: each takes 10-40 minutes); the rest keep the collection order.
FIRST = (
    "local-test-run",
    "tests/workflow/test_rehearsal.py",
    "tests/decoding/test_engine_exact.py",
    "tests/workflow/test_interrupt.py",
    "tests/workflow/test_resume_fingerprints.py",
)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = _module(item)
        item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(module, module)))

    def rank(item: pytest.Item) -> int:
        module = _module(item)
        group = SHARED_GROUPS.get(module, module)
        return FIRST.index(group) if group in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: the order inside each module is kept
