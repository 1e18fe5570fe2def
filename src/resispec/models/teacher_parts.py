"""How a shared teacher pass is cut into parts (`resispec.models.teacher`), without torch: the workflow
plans the parts when it builds its DAG."""

from __future__ import annotations

import math

TEACHER_BATCH = 8  # chunks per teacher forward; every part of a shared pass starts on a multiple of it


def teacher_parts(chunks: int, jobs: int) -> list[tuple[int, int]]:
    """[first, last) chunk ranges of a shared pass over ``chunks`` chunks cut into at most ``jobs`` parts
    of whole ``TEACHER_BATCH`` batches (the last part takes the rest)."""
    size = TEACHER_BATCH * math.ceil(chunks / (jobs * TEACHER_BATCH))
    return [(first, min(first + size, chunks)) for first in range(0, chunks, size)]
