"""Torch's CPU allocator in training jobs: transparent huge pages for allocations of 2 MB and more.

A training step allocates and frees tensors of tens of MB (the [batch, sequence, vocabulary] logits,
their float32 copies and their gradients), and each fresh one is mapped page by page. With
``THP_MEM_ALLOC_ENABLE=1`` torch's CPU allocator page-aligns them and asks the kernel for transparent
huge pages (``madvise``), as PyTorch's CPU performance tuning guide suggests. The arithmetic is the same,
so are the trained weights (docs/reproduction-notes.md, "Training jobs: the held-out target once, huge
pages"). Torch reads the variable once, at its first allocation, so a training step sets it before torch
is imported; a value the user set is kept. Where the kernel offers no huge pages, or outside Linux,
torch ignores it.
"""

from __future__ import annotations

import logging
import os
import sys

HUGE_PAGES_VARIABLE = "THP_MEM_ALLOC_ENABLE"
log = logging.getLogger(__name__)


def huge_page_allocations() -> bool:
    """Ask torch's CPU allocator for huge pages (unless the environment already says otherwise); returns
    whether this process's allocator will use them. Too late once torch is imported: then it says so in
    the log and changes nothing."""
    if "torch" in sys.modules:
        log.info("torch is already imported: its allocator keeps %s as it was", HUGE_PAGES_VARIABLE)
    else:
        os.environ.setdefault(HUGE_PAGES_VARIABLE, "1")
    return os.environ.get(HUGE_PAGES_VARIABLE, "0") not in ("", "0")
