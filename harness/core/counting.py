"""Counting shared by the checks of every subject: how often each item was yielded, how
many batches a number of items makes, whether every rank read as many batches, and whether
len() counted what a pass yielded."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .case import LenRaised, Observation
from .evidence import Violation, counted

# Why len() before a pass matters, in a violation's words.
SIZED_BEFORE = "a training loop sizes its epoch (LR schedule, progress bar) from len() before the epoch starts"


def batch_count(items: int, batch_size: int, drop_last: bool = False) -> int:
    """The batches ``items`` items make, ``batch_size`` at a time: the last one partial, or
    left out with ``drop_last`` (as ``BatchSampler`` cuts them)."""
    return items // batch_size if drop_last else -(-items // batch_size)


def unequal_counts(flag: str, counts: Sequence[int]) -> list[Violation]:
    """Every rank read as many batches (``counts``, per rank); else ``flag``, naming the ranks
    that ran out first and the step the others wait at."""
    if len(set(counts)) <= 1:
        return []
    fewest = min(counts)
    short = [rank for rank, count in enumerate(counts) if count == fewest]
    on = [rank for rank, count in enumerate(counts) if count > fewest]
    return [
        Violation(
            flag,
            f"rank(s) {', '.join(map(str, short))} ran out after {fewest} batches, while rank(s) "
            f"{', '.join(map(str, on))} had a batch {fewest} (batches per rank: {list(counts)}): under DDP the "
            f"ranks that have one wait forever in the gradient all-reduce of step {fewest}",
        )
    ]


def index_counts(observations: Sequence[Observation], dataset_size: int) -> np.ndarray:
    """How often every index of range(N) was yielded, all ranks of ``observations`` together
    (indices outside range(N) are valid_indices' to charge, and not counted here)."""
    arrays = [indices for observation in observations for indices in observation.indices]
    everything = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
    everything = everything[(everything >= 0) & (everything < dataset_size)]
    return np.bincount(everything, minlength=dataset_size)


def check_reported_lengths(
    observation: Observation, flag: str, miscounted: str, unit: tuple[str, str]
) -> list[Violation]:
    """Each rank's len(), asked before its pass and after it, against what the pass yielded
    (``observation.lengths``): the first rank whose len() raised or miscounted, charged to
    ``flag``, the subject's length invariant. ``miscounted`` words a wrong count, with
    ``{said}`` and ``{yielded}`` (``"len() says {said}, but it yielded {yielded}"``), the
    count in ``unit``, singular and plural (``1 batch``, ``2 batches``). A rank with no len()
    to ask (no ``__len__``, or not asked) is left to the caller."""
    before = observation.lengths_before or (None,) * len(observation.reported_lengths)
    for position, (asked_before, asked_after, got) in enumerate(
        zip(before, observation.reported_lengths, observation.lengths, strict=True)
    ):
        rank = observation.rank_of(position)
        for when, asked in (("before the pass", asked_before), ("after the pass", asked_after)):
            if isinstance(asked, LenRaised):
                return [Violation(flag, f"rank {rank}: {asked.summary} ({when}, which yielded {got})")]
        if isinstance(asked_before, int) and asked_before != got:
            after = f" (after it, {asked_after})" if asked_after != asked_before else ""
            wrong = miscounted.format(said=asked_before, yielded=counted(got, *unit))
            return [Violation(flag, f"rank {rank}: before the pass, {wrong}{after}: {SIZED_BEFORE}")]
        if isinstance(asked_after, int) and asked_after != got:
            return [Violation(flag, f"rank {rank}: {miscounted.format(said=asked_after, yielded=counted(got, *unit))}")]
    return []
