"""Known-bad samplers whose bug shows only across processes.

Inside one process (``properties/``, every rank simulated there) each is a perfect
DistributedSampler: same order on every rank object, deterministic, reshuffled by
set_epoch, seed-sensitive. In a real process group each rank computes its own order,
so the ranks' strided shares overlap and miss items. ``conformance/`` must reject
both, naming "ranks agree on one global order" and "union coverage".
"""

from __future__ import annotations

import numpy as np
import torch

from .parts import PartsSampler

# Per-process memo: (N, seed, epoch) -> permutation.
_PERMUTATIONS: dict[tuple[int, int, int], list[int]] = {}


class HashSeededShuffle(PartsSampler):
    """Seeds its shuffle from Python's hash() of a str, which differs in every process
    (PYTHONHASHSEED is random per interpreter)."""

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(hash(f"shuffle-{self.seed}-{self.epoch}") % 2**63)


class MemoisedUnseededPermutation(PartsSampler):
    """Draws each epoch's permutation from an unseeded numpy RNG once, then memoises it
    per process: stable within the process, different in every other one."""

    def order(self) -> list[int]:
        size = len(self.dataset)
        if not self.shuffle:
            return list(range(size))
        key = (size, self.seed, self.epoch)
        if key not in _PERMUTATIONS:
            _PERMUTATIONS[key] = np.random.default_rng().permutation(size).tolist()
        return _PERMUTATIONS[key]


class DefaultsToSingleRank(PartsSampler):
    """Left out, num_replicas and rank default to 1 and 0 instead of the process group's
    (a custom sampler that checks for a process group the wrong way): under DDP every
    rank then trains on the whole dataset. Explicit values work, so properties/ passes
    it; conformance/ must reject it, naming "num_replicas/rank default to the process group"."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        super().__init__(
            dataset, 1 if num_replicas is None else num_replicas, 0 if rank is None else rank, shuffle, seed, drop_last
        )


class ShuffleOffByDefault(PartsSampler):
    """A drop-in replacement whose `shuffle` defaults to False: a job that builds it as
    `DistributedSampler(dataset)` (the documentation's usage, seeds 001 and 004) silently
    trains on the dataset in file order every epoch. Every explicitly configured check
    passes; conformance/ must reject it, naming "built with the dataset alone, the
    contract's defaults"."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=False, seed=0, drop_last=False):
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)
