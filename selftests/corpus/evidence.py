"""Samplers that test the evidence behind a verdict rather than one invariant: how many
cases judged it, whether a run can be reproduced, how each fault is named."""

from __future__ import annotations

import random
from collections.abc import Iterator

import torch.distributed as dist

from .multiprocess_bad import ShuffleOffByDefault
from .parts import PartsSampler

# One seed in 31 reaches RareSeedBug's bug: those of this remainder.
RARE_BUG_PERIOD, RARE_BUG_REMAINDER = 31, 17


class RareSeedBug(PartsSampler):
    """Right everywhere but on one seed in 31: there, the last rank loses its last index.
    Random draws reach it on some runs and miss it in some tests on others, so it shows
    whether the same command gives the same verdict whatever earlier runs left behind."""

    def shard(self, indices: list[int]) -> list[int]:
        share = super().shard(indices)
        if self.seed % RARE_BUG_PERIOD == RARE_BUG_REMAINDER and self.rank == self.num_replicas - 1:
            return share[:-1]
        return share


class RankZeroRaisesSometimes(PartsSampler):
    """Rank 0 alone raises while iterating, on one dataset size in seven (as MONAI's
    DistributedSampler(even_divisible=False) and opacus raise on some ranks only): its peers
    go on into the suite's collective and wait there for a rank that never comes."""

    def __iter__(self) -> Iterator[int]:
        if self.rank == 0 and len(self.dataset) % 7 == 3:
            raise RuntimeError(f"rank 0 cannot shard {len(self.dataset)} items")
        return super().__iter__()


# CrashesOnSmallDatasets refuses datasets smaller than this: most sizes the draws lean to.
SMALLEST_DATASET = 200


class CrashesOnSmallDatasets(ShuffleOffByDefault):
    """Refuses datasets of fewer than 200 items (a bucketing sampler that needs a minimum of
    items per bucket, as speechbrain's DynamicBatchSampler crashes on tiny ones), and above
    that has a bug only real process groups see: `shuffle` defaults to False. The draws must
    go on past the crashing sizes until the group-only test has judged enough cases to see
    it; a "held" on the few cases left is the evidence this sampler must not get."""

    def validate(self) -> None:
        super().validate()
        if len(self.dataset) < SMALLEST_DATASET:
            raise ValueError(f"needs at least {SMALLEST_DATASET} items to fill its buckets, got {len(self.dataset)}")


class PadsByHash(PartsSampler):
    """Pads with items chosen by ``hash()`` of a str: which ones, and so the smallest case
    Hypothesis shrinks its failure to, depends on the process's hash seed."""

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last or not indices:
            return super().pad(indices)
        pick = random.Random(hash(f"pad-{self.seed}"))
        return indices + [pick.randrange(len(indices)) for _ in range(self.total_size - len(indices))]


class RaisesInAGroup(PartsSampler):
    """A DistributedSampler on simulated ranks; inside a process group, where it would
    rebalance its shares across the ranks (as fairchem's ``BalancedBatchSampler`` does), it
    raises on every case. What it does in a job is never judged: no invariant checked in
    both places may be held on the simulated cases alone."""

    def __iter__(self) -> Iterator[int]:
        if dist.is_available() and dist.is_initialized():
            raise RuntimeError("rebalancing needs a CUDA tensor for all_gather")
        return super().__iter__()
