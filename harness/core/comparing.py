"""Comparing two readings of the same ranks, shared by every subject's checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .case import Observation
from .evidence import Violation, shorten


def check_same_indices(first: Observation, second: Observation, flag: str, what: str) -> list[Violation]:
    """Every rank yielded the same indices in both readings; else ``flag``, saying ``what``
    and the first rank that differs."""
    for rank, (a, b) in enumerate(zip(first.indices, second.indices, strict=True)):
        if not np.array_equal(a, b):
            said = f"rank {rank} first yielded {shorten(a)}, then {shorten(b)}"
            return [Violation(flag, f"{what}: {said}; {first_difference(a, b)}")]
    return []


def first_difference(first: Sequence[Any] | np.ndarray, second: Sequence[Any] | np.ndarray, what: str = "item") -> str:
    """Where two readings (of indices, or of batches) first differ, and what each holds there:
    ``item 17 differs (the first 17 agree): 42, then 7``. Shown where two readings that begin
    alike would read the same in a message that shows their beginnings."""
    agree = next(
        (k for k, (a, b) in enumerate(zip(first, second, strict=False)) if not np.array_equal(a, b)),
        min(len(first), len(second)),
    )
    if agree < min(len(first), len(second)):
        return f"{what} {agree} differs (the first {agree} agree): {_shown(first[agree])}, then {_shown(second[agree])}"
    if len(first) == len(second):
        return f"every {what} agrees"
    longer, which = (first, "first") if len(first) > len(second) else (second, "second")
    plural = what + ("es" if what.endswith("ch") else "s")
    return f"the first {agree} {plural} agree, then only the {which} goes on, with {_shown(longer[agree])}"


def _shown(value: Any) -> str:
    return shorten(value) if np.ndim(value) else str(int(value))


def fresh_epochs(has_set_epoch: bool, before: int, epoch: int) -> list[int]:
    """What a determinism check's fresh sampler reads, to be compared, by its last epoch, with
    a sampler that read ``before`` then ``epoch``: ``epoch`` alone, as a run resumed there does.
    A sampler without set_epoch can only tell its passes apart by counting them (torchdata's
    ``MultiNodeWeightedSampler`` reseeds each pass from the seed and the pass count): its
    fresh twin reads the same passes, and pass 2 is compared with pass 2."""
    return [epoch] if has_set_epoch else [before, epoch]


def reread_differs(has_set_epoch: bool, before: int, epoch: int) -> str:
    """What a determinism check says when the last epochs of its two readings
    (:func:`fresh_epochs`) differ."""
    if has_set_epoch:
        return f"epoch {epoch} read after epoch {before}, and by a fresh sampler, differs"
    return "the sampler has no set_epoch(): its second pass, and a fresh sampler's second pass, differ"


def two_epochs(has_set_epoch: bool, first: int, second: int) -> str:
    """How a reshuffle check read the two epochs it found alike."""
    if has_set_epoch:
        return f"set_epoch({first}) then set_epoch({second})"
    return f"the sampler has no set_epoch(), and two epochs of it, {first} and {second}"
