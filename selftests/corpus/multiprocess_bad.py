"""Known-bad samplers whose bug shows only in real process groups: across processes, in
the group's defaults, or through a real DataLoader.

Inside one process (``properties/``, every rank simulated there) each is a perfect
DistributedSampler: same order on every rank object, deterministic, reshuffled by
set_epoch, seed-sensitive. In a real process group the first two compute their own
order in each rank, so the ranks' strided shares overlap and miss items. ``conformance/``
must reject both, naming "ranks agree on one global order" and "union coverage".
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import BatchSampler

from .families import ShardedBatchesFromGroup
from .parts import PartsSampler
from .rejections import every, rejected

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


@rejected(
    "test_ranks_agree_on_one_order",
    "agrees_across_ranks",
    {"strided": "in a group the strided check's one-rank order is built with num_replicas=1 too, which it ignores"},
    under="torch",
    whole_suite=True,
)
class RankFromTheGroupAlways(PartsSampler):
    """Takes num_replicas and rank from the process group whenever there is one, whatever it is
    given (funasr's CustomDistributedBatchSampler does): right on every rank of a job that gives
    the group's own, wrong wherever another is asked for, as when every process builds the one
    global order with num_replicas=1, rank=0. properties/ has no group and passes it;
    conformance/ must reject it, naming "ranks agree on one global order"."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            num_replicas, rank = torch.distributed.get_world_size(), torch.distributed.get_rank()
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)


@rejected(
    "test_num_replicas_and_rank_default_to_the_group",
    "group_defaults",
    every(
        "equal_length disjoint pads_from_head strided unshuffled_in_order", "every rank then yields the whole dataset"
    ),
    under="torch",
    whole_suite=True,
)
class DefaultsToSingleRank(PartsSampler):
    """Left out, num_replicas and rank default to 1 and 0 instead of the process group's
    (a custom sampler that checks for a process group the wrong way): under DDP every
    rank then trains on the whole dataset. Explicit values work, so properties/ passes
    it; conformance/ must reject it, naming "num_replicas/rank default to the process group"."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        super().__init__(
            dataset, 1 if num_replicas is None else num_replicas, 0 if rank is None else rank, shuffle, seed, drop_last
        )


@rejected(
    "test_built_from_the_dataset_alone_the_defaults_are_the_contracts", "defaults", under="torch", whole_suite=True
)
class ShuffleOffByDefault(PartsSampler):
    """A drop-in replacement whose `shuffle` defaults to False: a job that builds it as
    `DistributedSampler(dataset)` (the documentation's usage, seeds 001 and 004) silently
    trains on the dataset in file order every epoch. Every explicitly configured check
    passes; conformance/ must reject it, naming "built with the dataset alone, the
    contract's defaults"."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=False, seed=0, drop_last=False):
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)


# Under quick: the in-process loader test's five draws read the order before the global RNG moves.
@rejected("test_dataloader_in_process", "loader_yields_sampler", under="torch", whole_suite=True, profile="quick")
class SeedsGlobalRNGInSetEpoch(PartsSampler):
    """Seeds torch's global RNG in set_epoch (and __init__) and shuffles from it at the first
    next(), as a loop that calls `torch.manual_seed(seed + epoch)` before each epoch and
    leaves the shuffle to the process RNG does. Its draw leaves the global RNG as it found
    it (`fork_rng`), so every pass after set_epoch(e) repeats the same order. A DataLoader
    draws its workers' base seed from that RNG when its iterator starts
    (`_BaseDataLoaderIter.__init__`), before the sampler's first next(): the loader's pass
    is another permutation than the sampler's own. Every check of the sampler itself
    passes; conformance/ must reject it, naming "DataLoader yields the sampler's indices"."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        torch.manual_seed(self.seed + epoch)

    def order(self) -> list[int]:
        if not self.shuffle:
            return super().order()
        with torch.random.fork_rng(devices=[]):  # the CPU generator, the one the loader draws from
            return torch.randperm(len(self.dataset)).tolist()

    def __iter__(self) -> Iterator[int]:
        yield from super().__iter__()  # a generator: the order is drawn at the first next()


@rejected(
    "test_dataloader_in_process",
    "loader_yields_sampler",
    {"validates_arguments": "it checks no rank against num_replicas"},
    under="batch",
    whole_suite=True,
    profile="quick",
)
class BatchesOfGlobalRNGOrder(ShardedBatchesFromGroup):
    """:class:`SeedsGlobalRNGInSetEpoch`'s bug in a hand-written batch sampler that deals whole
    batches (``ShardedBatches``) and checks none of its arguments: torch's global RNG seeded in
    set_epoch, the order drawn from it at the first next(), so a DataLoader that takes it as
    ``batch_sampler=`` yields other batches than the sampler's own; and rank >= num_replicas is
    accepted. conformance/ must reject it, naming "DataLoader yields the sampler's indices" for
    a sampler that makes its own batches."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, batch_size=1):
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last, batch_size)
        self.set_epoch(0)

    def check_arguments(self, num_replicas, rank):
        pass  # the bug: rank >= num_replicas is accepted

    def set_epoch(self, epoch: int) -> None:
        torch.manual_seed(self.seed + epoch)

    def _batches(self) -> list[list[int]]:
        if not self.shuffle:
            return super()._batches()
        with torch.random.fork_rng(devices=[]):  # the CPU generator, the one the loader draws from
            order = torch.randperm(len(self.dataset)).tolist()
        return list(BatchSampler(order, self.batch_size, self.drop_last))

    def __iter__(self) -> Iterator[list[int]]:
        yield from super().__iter__()  # a generator: the order is drawn at the first next()
