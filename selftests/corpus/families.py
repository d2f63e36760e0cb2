"""Samplers of the contract families other than `torch` (docs/contracts.md, "Contracts").

For each contract, one sampler that keeps it (the way the real project does it) and one
with a real bug that the contract must reject, declaring above it what a certification
under that contract must charge (``@rejected(...)``, ``selftests/corpus/rejections.py``). They take their rank as constructor
arguments; see docs/certify-your-sampler.md, "Samplers that take their rank from
elsewhere", for the others.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, RandomSampler, Sampler, SequentialSampler

from sampler_conformance.adapters.torch_batches import (
    AspectRatioBatches,
    ContiguousBlocks,  # maskrcnn-benchmark style: padded from the head, rank r takes the r-th block
    LabelGroups,
    PerRankBatches,
    RepeatedGroups,
)

from .rejections import PER_EPOCH_TEST, rejected


def _permutation(n: int, seed: int, shuffle: bool = True) -> list[int]:
    if not shuffle:
        return list(range(n))
    generator = torch.Generator()
    generator.manual_seed(seed)
    return torch.randperm(n, generator=generator).tolist()


def _check_rank(num_replicas: int, rank: int) -> None:
    if num_replicas <= 0 or not 0 <= rank < num_replicas:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")


# ---- contract `contiguous` (family B) ---------------------------------------------


@rejected(
    PER_EPOCH_TEST,
    "contiguous",
    {"pads_from_head": "its padding repeats the tail"},
    under="contiguous",
)
class ContiguousTailPadding(ContiguousBlocks):
    """Bug: pads with the tail of the order instead of its head (pytorch #45324-style padding)."""

    def __iter__(self):
        order = _permutation(self.n, self.seed + self.epoch, self.shuffle)
        total = self.num_samples * self.num_replicas
        if order and total > len(order):
            order = order + (order[::-1] * math.ceil(total / len(order)))[: total - len(order)]
        order = order[:total]
        start = self.rank * self.num_samples
        return iter(order[start : start + self.num_samples])


# ---- contract `partition` (family C) ----------------------------------------------


class ExactPartition(Sampler[int]):
    """Lightning UnrepeatedDistributedSampler style, seeded properly: strided, no padding."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        _check_rank(num_replicas, rank)
        self.n, self.num_replicas, self.rank, self.shuffle, self.seed, self.epoch = (
            len(dataset),
            num_replicas,
            rank,
            shuffle,
            seed,
            0,
        )

    def __iter__(self):
        return iter(_permutation(self.n, self.seed + self.epoch, self.shuffle)[self.rank :: self.num_replicas])

    def __len__(self):
        return len(range(self.rank, self.n, self.num_replicas))

    def set_epoch(self, epoch):
        self.epoch = epoch


@rejected(PER_EPOCH_TEST, "balanced", {"disjoint": "neighbouring shards share their boundary item"}, under="partition")
class OverlappingPartition(ExactPartition):
    """Bug: contiguous shards whose boundaries overlap by one index (an off-by-one in the end)."""

    def __iter__(self):
        order = _permutation(self.n, self.seed + self.epoch, self.shuffle)
        size, extra = divmod(self.n, self.num_replicas)
        start = self.rank * size + min(self.rank, extra)
        stop = start + size + (1 if self.rank < extra else 0)
        return iter(order[start : self._end(stop)])

    def _end(self, stop):
        return stop + 1 if self.rank < self.num_replicas - 1 else stop  # the off-by-one

    def __len__(self):
        size, extra = divmod(self.n, self.num_replicas)
        start = self.rank * size + min(self.rank, extra)
        return len(range(start, min(self._end(start + size + (1 if self.rank < extra else 0)), self.n)))


# ---- contract `infinite` (family D) -----------------------------------------------


class InfiniteStream(Sampler[int]):
    """detectron2 TrainingSampler style: one seeded endless stream of permutations, strided."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        _check_rank(num_replicas, rank)
        self.n, self.num_replicas, self.rank, self.shuffle, self.seed = len(dataset), num_replicas, rank, shuffle, seed

    def _stream(self, seed):
        generator = torch.Generator()
        generator.manual_seed(seed)
        while True:
            if self.shuffle:
                yield from torch.randperm(self.n, generator=generator).tolist()
            else:
                yield from range(self.n)

    def __iter__(self):
        return itertools.islice(self._stream(self.seed), self.rank, None, self.num_replicas)


@rejected(PER_EPOCH_TEST, "stream_blocks_are_permutations", under="infinite")
class InfiniteRankSeeded(InfiniteStream):
    """Bug: every rank seeds its stream with seed + rank (detectron2 #4438, mlcommons #625)."""

    def __iter__(self):
        return itertools.islice(self._stream(self.seed + self.rank), self.rank, None, self.num_replicas)


@rejected(PER_EPOCH_TEST, "valid_indices", under="infinite")
class InfiniteOnePass(InfiniteStream):
    """Bug: the stream ends after one pass of N items (an epoch's sampler, detectron2's
    InferenceSampler style, where the training loop counts iterations, not epochs): the job
    runs out of data at the end of the first pass."""

    def __iter__(self):
        return itertools.islice(self._stream(self.seed), self.rank, self.n, self.num_replicas)


@rejected("test_seed_changes_order", "seed_effective", under="infinite")
class InfiniteSeedIgnored(InfiniteStream):
    """Bug: the stream's generator is seeded with a constant, not with ``seed``: every run,
    whatever its seed, trains on the same stream."""

    def __iter__(self):
        return itertools.islice(self._stream(0), self.rank, None, self.num_replicas)


@rejected("test_same_order_without_set_epoch", "deterministic", under="infinite")
class InfiniteGeneratorKept(InfiniteStream):
    """Bug: the stream's generator is seeded once, when the sampler is built, and kept: a second
    iterator goes on from where the first left the generator, so a DataLoader made again (after
    an evaluation, or a restart within the process) reads another stream than the job's first."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)
        self.generator = torch.Generator().manual_seed(seed)

    def _stream(self, seed):
        while True:
            if self.shuffle:
                yield from torch.randperm(self.n, generator=self.generator).tolist()
            else:
                yield from range(self.n)


# ---- contract `batch` (family F) --------------------------------------------------


class ShardedBatches(Sampler[list[int]]):
    """accelerate BatchSamplerShard style (even_batches): rank r gets batches r, r+W, ...;
    the last round is completed from the first batches so every rank gets as many."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, batch_size=1):
        self.check_arguments(num_replicas, rank)
        self.num_replicas, self.rank = num_replicas, rank
        self.dataset, self.shuffle, self.seed, self.drop_last, self.batch_size = (
            dataset,
            shuffle,
            seed,
            drop_last,
            batch_size,
        )

    def check_arguments(self, num_replicas, rank):
        _check_rank(num_replicas, rank)

    def _batches(self):
        if len(self.dataset) == 0:  # RandomSampler refuses an empty dataset
            return []
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed)
            base: Sampler[int] = RandomSampler(self.dataset, generator=generator)
        else:
            base = SequentialSampler(self.dataset)
        return list(BatchSampler(base, self.batch_size, self.drop_last))

    def _rounds(self):
        batches = self._batches()
        if not batches:
            return 0, batches
        return math.ceil(len(batches) / self.num_replicas), batches

    def __iter__(self):
        rounds, batches = self._rounds()
        cycled = (batches * math.ceil(rounds * self.num_replicas / max(len(batches), 1)))[: rounds * self.num_replicas]
        return iter(cycled[self.rank :: self.num_replicas])

    def __len__(self):
        return self._rounds()[0]


@rejected("test_equal_batch_counts", "equal_batches", under="batch")
class UnevenShardedBatches(ShardedBatches):
    """Bug: no completion of the last round, so some ranks get one batch fewer (pytorch #22584)."""

    def __iter__(self):
        return iter(self._batches()[self.rank :: self.num_replicas])

    def __len__(self):
        return len(range(self.rank, len(self._batches()), self.num_replicas))


@rejected(
    PER_EPOCH_TEST,
    "whole_batches",
    {"valid_indices": "a batch smaller than W leaves some ranks an empty batch, which no DataLoader can collate"},
    under="batch",
)
class SplitBatches(ShardedBatches):
    """Bug: every batch is split across the ranks (rank r takes items r, r+W, ... of each batch),
    like accelerate's split_batches=True used where whole batches per rank were meant."""

    def __iter__(self):
        return iter([batch[self.rank :: self.num_replicas] for batch in self._batches()])

    def __len__(self):
        return len(self._batches())


@rejected(PER_EPOCH_TEST, "share_batched", under="rank_batches")
class ContiguousSharesBatched(PerRankBatches):
    """Bug: each rank batches a contiguous block of the padded order (ContiguousBlocks, the
    maskrcnn-benchmark layout, under a DataLoader's batches) where the contract promises its
    strided share: the ranks read other items than DataLoader(sampler=DistributedSampler).
    Under `rank_blocks` it is that contract's reference, per_rank_blocks."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, batch_size=1):
        super().__init__(ContiguousBlocks(dataset, num_replicas, rank, shuffle, seed, drop_last), batch_size, drop_last)


class ShardedBatchesFromGroup(ShardedBatches):
    """ShardedBatches that takes num_replicas/rank from the process group when left out, as
    accelerate's samplers do. Like them it has no set_epoch, which the `batch` contract does
    not promise: the suite must never call it, nor charge its absence to anything."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, batch_size=1):
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last, batch_size)


# ---- contract `groups` (family H) -------------------------------------------------
# Its known-bads are its reference (adapters/torch_batches.py) with one bug each.


@rejected(PER_EPOCH_TEST, "repeat_groups", under="groups")
class CopiesNotAdjacent(RepeatedGroups):
    """Bug: the generation batch's selection repeated as a whole, G times, where each index
    should be repeated G times in a row (RepeatSampler's repeat_count where mini_repeat_count
    was meant, trl #4531): the trainer's groups of G mix different samples."""

    def generation(self, selected):
        return selected * self.repeats


@rejected(PER_EPOCH_TEST, "selected_once", under="groups")
class GenerationRepeated(RepeatedGroups):
    """Bug: each generation batch read twice as new data (trl #3675: RepeatSampler repeated its
    chunk for every step of a generation, and each reading was trained on)."""

    def generations(self):
        return [items for items in super().generations() for _ in range(2)]


# ---- contract `labels` (family I) -------------------------------------------------
# Its known-bads are its reference (adapters/torch_batches.py) with one bug each.


@rejected(PER_EPOCH_TEST, "label_grouped", under="labels")
class LabelsConcatenated(LabelGroups):
    """Bug: each label's items, in turn, go into the stream whole, so most batches hold one
    label (sentence-transformers' GroupByLabelBatchSampler before #3668, issue #2920: "~99%
    single-class batches", zero gradients for the triplet losses it was made for)."""

    def stream(self, generator):
        pairs = self.pairs(generator)
        return [index for label in self.shuffled(sorted(pairs), generator) for index in pairs[label]]


@rejected(PER_EPOCH_TEST, "read_once", under="labels")
class EveryRankReadsAll(LabelGroups):
    """Bug: every rank reads every batch: a batch sampler with no rank, handed to each rank's
    DataLoader without a wrapper to shard it."""

    def __iter__(self):
        return iter(self.epoch_batches())

    def __len__(self):
        return len(self.epoch_batches())


@rejected(PER_EPOCH_TEST, "leftovers_bounded", under="labels")
class HalfOfEachLabel(LabelGroups):
    """Bug: each label keeps the first half of its items, in whole pairs (sentence-transformers
    #2782: `sample_indices[: len(sample_indices) // 2]`, meant to make each label's count even)."""

    def pairs(self, generator):
        return {label: items[: len(items) // 4 * 2] for label, items in super().pairs(generator).items()}


@rejected(
    "test_set_epoch_reshuffles",
    "reshuffles_on_set_epoch",
    {"seed_effective": "the seed never reaches the order either"},
    under="labels",
)
class ConstantSeedGenerator(LabelGroups):
    """Bug: the epoch's order is drawn from a generator seeded with a constant, not with
    seed + epoch: neither the seed nor set_epoch reaches the batches, and every epoch of every
    run trains on the same ones."""

    def stream(self, generator):
        return super().stream(torch.Generator().manual_seed(0))


# ---- contract `aspect_ratio` (family J) -------------------------------------------
# Its known-bads are its reference (adapters/torch_batches.py) with one bug each.


@rejected(PER_EPOCH_TEST, "aspect_grouped", under="aspect_ratio")
class BucketOfPosition(AspectRatioBatches):
    """Bug: each item's bucket is looked up by its position in the rank's share, not by its
    index, so the buckets group nothing: a sampler's positions taken for the dataset's indices
    (a mix-up modelled here, not a report; pytorch/vision #2884 asked it of GroupedBatchSampler's
    ``group_ids[idx]``, whose code was right)."""

    def bucket(self, index, position):
        return self.aspects[position]


@rejected(
    PER_EPOCH_TEST,
    "aspect_share",
    {
        "len_matches_iter": "len() counts ceil(N/W) // B batches, and a rank whose two buckets' leftovers make a "
        "batch or more yields one fewer",
        "equal_batches": "ranks whose leftovers make a batch run one step fewer than those whose do not",
    },
    under="aspect_ratio",
)
class DropsEachBucketsTail(AspectRatioBatches):
    """Bug: with drop_last each bucket's leftover is dropped apart, never joined with the
    other's, so a rank drops up to 2(B - 1) items and yields a batch fewer than len() says and
    than other ranks: the DDP hang of mmdet #11114 (MultiDataAspectRatioBatchSampler, each
    dataset's leftovers dropped apart)."""

    def __iter__(self):
        batches = list(super().__iter__())
        if not self.drop_last:
            return iter(batches)
        return iter([batch for batch in batches if len({self.aspects[i] for i in batch}) == 1])
