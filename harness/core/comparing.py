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


def reread_differs(has_set_epoch: bool, before: int, epoch: int) -> str:
    """What a determinism check says when epoch ``epoch``, read after epoch ``before`` and by a
    fresh sampler, differs (without set_epoch: its second reading and a fresh first one)."""
    if has_set_epoch:
        return f"epoch {epoch} read after epoch {before}, and by a fresh sampler, differs"
    return "the sampler has no set_epoch(): its second epoch, and a fresh sampler's first, differ"


def two_epochs(has_set_epoch: bool, first: int, second: int) -> str:
    """How a reshuffle check read the two epochs it found alike."""
    if has_set_epoch:
        return f"set_epoch({first}) then set_epoch({second})"
    return f"the sampler has no set_epoch(), and two epochs of it, {first} and {second}"
