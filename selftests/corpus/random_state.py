"""Samplers seeded through numpy, whose generator refuses part of the seed range: one that
crashes at the epoch that reaches it, and one that refuses those seeds when it is built."""

from __future__ import annotations

import numpy as np

from .parts import PartsSampler


class RandomStateSampler(PartsSampler):
    """DistributedSampler with its permutation from ``np.random.RandomState(seed + epoch)``,
    as many samplers seed numpy (MONAI's ``partition_dataset`` seeds ``RandomState(seed)``).

    RandomState refuses seeds of 2**32 and more, so ``seed + epoch >= 2**32`` raises while
    iterating: a job seeded at 2**32 - 1 crashes at the start of epoch 1, where
    DistributedSampler takes the seed. The suite judges it on the seeds it accepts, reports
    the refusal once, as a finding, and fails edge_sizes for the seeds it takes and then refuses.
    """

    def order(self) -> list[int]:
        size = len(self.dataset)
        if self.shuffle:
            return np.random.RandomState(self.seed + self.epoch).permutation(size).tolist()
        return list(range(size))


class RandomStateRefusedAtConstruction(PartsSampler):
    """The same generator, seeded with ``(seed + epoch) mod 2**32`` so that every epoch runs,
    and refusing seeds of 2**32 and more when it is built, with a clear error: a job with
    such a seed stops at its first line. Conforms, on the seeds it takes, with a finding."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False) -> None:
        if not 0 <= seed < 2**32:
            raise ValueError(f"seed must be in [0, 2**32), numpy's RandomState range; got {seed}")
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)

    def order(self) -> list[int]:
        size = len(self.dataset)
        if self.shuffle:
            return np.random.RandomState((self.seed + self.epoch) % 2**32).permutation(size).tolist()
        return list(range(size))
