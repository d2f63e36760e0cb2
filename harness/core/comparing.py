"""Comparing two readings of the same ranks, shared by every subject's checks."""

from __future__ import annotations

import numpy as np

from .case import Observation
from .evidence import Violation, shorten


def check_same_indices(first: Observation, second: Observation, flag: str, what: str) -> list[Violation]:
    """Every rank yielded the same indices in both readings; else ``flag``, saying ``what``
    and the first rank that differs."""
    for rank, (a, b) in enumerate(zip(first.indices, second.indices, strict=True)):
        if not np.array_equal(a, b):
            return [Violation(flag, f"{what}: rank {rank} first yielded {shorten(a)}, then {shorten(b)}")]
    return []
