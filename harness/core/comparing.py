"""Comparing two readings of the same ranks, shared by every subject's checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .case import Observation
from .evidence import Violation, shorten


def check_same_indices(
    first: Observation, second: Observation, flag: str, what: str, readings: tuple[str, str] | None = None
) -> list[Violation]:
    """Every rank yielded the same indices in both readings; else ``flag``, saying ``what``
    and the first rank that differs. ``readings`` name the two where "first" and "then" would
    not say which is which (fresh workers and persistent ones, read side by side)."""
    for position, (a, b) in enumerate(zip(first.indices, second.indices, strict=True)):
        if not np.array_equal(a, b):
            rank = first.rank_of(position)
            if readings is None:
                said = f"rank {rank} first yielded {shorten(a)}, then {shorten(b)}"
                where = first_difference(a, b)
            else:
                said = f"rank {rank} yielded {shorten(a)} through {readings[0]} and {shorten(b)} through {readings[1]}"
                where = first_difference(a, b, readings=readings)
            return [Violation(flag, f"{what}: {said}; {where}")]
    return []


def first_difference(
    first: Sequence[Any] | np.ndarray,
    second: Sequence[Any] | np.ndarray,
    unit: str = "position",
    readings: tuple[str, str] = ("the first reading", "the second"),
) -> str:
    """Where two readings that should be alike (of indices, or of batches) first differ, and
    what each holds there: ``position 17 is 42 in the first reading and 7 in the second;
    positions 0 to 16 agree``, or ``the first reading ends before batch 4, which is [3, 9] in
    the second; batches 0 to 3 agree``. Messages show it beside the readings' beginnings and
    ends, which may be alike where the readings are not. ``readings`` name the two as the
    message's reader knows them."""
    at = _agreeing_prefix(first, second)
    if at == len(first) == len(second):
        return f"they agree at every {unit}"
    if at == len(second):
        said = f"{unit} {at} is {_shown(first[at])} in {readings[0]}, and {readings[1]} ends before it"
    elif at == len(first):
        said = f"{readings[0]} ends before {unit} {at}, which is {_shown(second[at])} in {readings[1]}"
    else:
        said = f"{unit} {at} is {_shown(first[at])} in {readings[0]} and {_shown(second[at])} in {readings[1]}"
    return said + _agreeing(unit, at)


def _agreeing_prefix(first: Sequence[Any] | np.ndarray, second: Sequence[Any] | np.ndarray) -> int:
    """How many positions two readings agree at from their start."""
    pairs = enumerate(zip(first, second, strict=False))
    return next((k for k, (a, b) in pairs if not np.array_equal(a, b)), min(len(first), len(second)))


def _agreeing(unit: str, count: int) -> str:
    """``; positions 0 to 16 agree``: the agreeing prefix, numbered as the position that differs."""
    units = unit + ("es" if unit.endswith(("ch", "s")) else "s")
    if count == 0:
        return ""
    if count == 1:
        return f"; {unit} 0 agrees"
    return f"; {units} 0 {'and' if count == 2 else 'to'} {count - 1} agree"


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
