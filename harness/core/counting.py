"""Counting shared by the checks of every subject: how often each item was yielded, and how
many batches a number of items makes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .case import Observation


def batch_count(items: int, batch_size: int, drop_last: bool = False) -> int:
    """The batches ``items`` items make, ``batch_size`` at a time: the last one partial, or
    left out with ``drop_last`` (as ``BatchSampler`` cuts them)."""
    return items // batch_size if drop_last else -(-items // batch_size)


def index_counts(observations: Sequence[Observation], dataset_size: int) -> np.ndarray:
    """How often every index of range(N) was yielded, all ranks of ``observations`` together
    (indices outside range(N) are valid_indices' to charge, and not counted here)."""
    arrays = [indices for observation in observations for indices in observation.indices]
    everything = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
    everything = everything[(everything >= 0) & (everything < dataset_size)]
    return np.bincount(everything, minlength=dataset_size)
