"""Training jobs ask torch's CPU allocator for huge pages before torch is imported (in fresh processes:
torch reads the variable once, at its first allocation)."""

import os
import subprocess
import sys

import pytest

# In a fresh process: the allocator's choice, then whether torch's allocations of 2 MB and more are
# page-aligned (with THP_MEM_ALLOC_ENABLE torch aligns them to a page for the huge-page advice; without it
# to 64 bytes, so among 16 such tensors of different sizes some start inside a page).
PROBE = """
import os, sys
from resispec.models.allocator import huge_page_allocations
{before}
chosen = huge_page_allocations()
import torch
aligned = all(torch.empty(600_000 + 80 * i).data_ptr() % os.sysconf("SC_PAGESIZE") == 0 for i in range(16))
print(chosen, aligned, os.environ.get("THP_MEM_ALLOC_ENABLE"))
"""


def _probe(before: str = "", **env) -> list[str]:
    environment = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"} | env
    code = PROBE.format(before=before)
    out = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torch reads the variable on Linux only")
def test_huge_pages_are_asked_for_before_torch_and_a_users_choice_is_kept():
    assert _probe() == ["True", "True", "1"]
    assert _probe(THP_MEM_ALLOC_ENABLE="0") == ["False", "False", "0"]  # the user's choice
    assert _probe(before="import torch") == ["False", "False", "None"]  # too late: nothing changes


def test_the_training_steps_import_no_torch_before_asking():
    code = (
        "import sys\n"
        "from resispec.workflow import bridge\n"
        "from resispec.workflow.steps import prepare_model, teacher\n"
        "assert 'torch' not in sys.modules, 'torch imported before a training step runs'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
