"""Known-bad samplers: each is :class:`PartsSampler` with one bug a real project shipped.

The docstring's first line names the bug class; ``@rejected(...)`` above each declares the
property test that must catch it and everything a certification under ``torch`` must charge
(``selftests/corpus/rejections.py``; ``selftests/catalogue.py`` derives its tables from them).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from sampler_conformance.adapters.lazy_permutation import LazyDistributedSampler

from .parts import PartsSampler
from .rejections import AT_THE_EDGES, COST_TEST, EDGE_TEST, PER_EPOCH_TEST, every, rejected

# Why a bug breaks more than its own invariant, for the reasons below.
STRIDED_FROM_HEAD = (
    "strided compares each rank's share with Q, the one-rank order padded from its head, "
    "so any other padding breaks it too"
)
UNEQUAL_SHARES = "ranks with unequal shares form no global order, so padding and dataset order cannot hold"


# ---- lengths ----------------------------------------------------------------------------


@rejected(PER_EPOCH_TEST, "len_matches_iter", under="torch")
class LenIgnoresDropLast(PartsSampler):
    """`__len__` disagrees with iteration: it reports ceil(N/W) even under drop_last.

    A DataLoader sizes its progress bar and LR
    schedule from len() while the loop runs one step fewer.
    """

    def __len__(self) -> int:
        return math.ceil(len(self.dataset) / self.num_replicas)


@rejected(
    PER_EPOCH_TEST,
    "equal_length",
    {"covers": "floor(N/W) items per rank leave the remainder unread"},
    under="torch",
)
class FloorNotCeil(PartsSampler):
    """Floor instead of ceil: every rank gets N // W items, the remainder silently lost."""

    def samples_per_rank(self, size: int) -> int:
        return size // self.num_replicas


@rejected(
    PER_EPOCH_TEST,
    "equal_length",
    {
        "pads_from_head": UNEQUAL_SHARES,
        "unshuffled_in_order": UNEQUAL_SHARES,
        "strided": "its shares are contiguous blocks, and of unequal length",
    },
    sometimes={"equal_batches": "unequal shares give unequal batch counts, for the batch sizes drawn"},
    under="torch",
)
class UnevenContiguousSplit(PartsSampler):
    """Uneven per-rank lengths: contiguous shards without padding, the first N % W ranks
    one item longer (detectron2 InferenceSampler used for training; pytorch #22584)."""

    def bounds(self) -> tuple[int, int]:
        base, extra = divmod(len(self.dataset), self.num_replicas)
        start = self.rank * base + min(self.rank, extra)
        return start, start + base + (self.rank < extra)

    def __iter__(self) -> Iterator[int]:
        start, stop = self.bounds()
        return iter(self.order()[start:stop])

    def __len__(self) -> int:
        start, stop = self.bounds()
        return stop - start


@rejected(
    "test_equal_batch_counts",
    "equal_batches",
    {
        "equal_length": "without padding the ranks yield ceil(N/W) or floor(N/W) items",
        "pads_from_head": UNEQUAL_SHARES,
        "unshuffled_in_order": UNEQUAL_SHARES,
        "strided": "without padding the last ranks' shares stop short of Q[r::W]",
    },
    under="torch",
)
class UnpaddedStrided(PartsSampler):
    """Uneven batch counts: strided shares without padding, so ranks yield ceil or floor
    of N/W items and one rank runs an extra step: the DDP hang of pytorch #22584, #141069.

    `__len__` is honest, so
    BatchSampler's len() differs across ranks too.
    """

    def pad(self, indices: list[int]) -> list[int]:
        return indices

    def shard(self, indices: list[int]) -> list[int]:
        return indices[self.rank :: self.num_replicas]

    def __len__(self) -> int:
        return len(range(self.rank, len(self.dataset), self.num_replicas))


# ---- indices ----------------------------------------------------------------------------


@rejected(PER_EPOCH_TEST, "valid_indices", under="torch")
class YieldsTensors(PartsSampler):
    """Yields 0-d tensors: `iter(torch.randperm(N))` without `.tolist()`."""

    def __iter__(self) -> Iterator[Any]:
        return iter(torch.tensor(self.shard(self.pad(self.order())), dtype=torch.int64))


@rejected(PER_EPOCH_TEST, "valid_indices", under="torch")
class YieldsFloats(PartsSampler):
    """Yields floats: indices computed with true division, e.g. `i * N / N`."""

    def __iter__(self) -> Iterator[Any]:
        return iter([float(i) for i in self.shard(self.pad(self.order()))])


@rejected(
    PER_EPOCH_TEST,
    "valid_indices",
    {"pads_from_head": "its padding is N + k, not the head", "strided": STRIDED_FROM_HEAD},
    under="torch",
)
class PadsPastTheEnd(PartsSampler):
    """Out-of-range index: pads with `N + k` (a 'dummy sample' id) instead of real items."""

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last:
            return super().pad(indices)
        return indices + list(range(len(indices), self.total_size))


@rejected(PER_EPOCH_TEST, "valid_indices", under="torch")
class NeverStops(PartsSampler):
    """Never stops: an infinite training stream (detectron2 TrainingSampler, family D)
    certified as a finite epoch sampler."""

    def __iter__(self) -> Iterator[int]:
        share = self.shard(self.pad(self.order()))
        return itertools.cycle(share) if share else iter(())


# ---- which ranks get which indices ------------------------------------------------------


@rejected(
    PER_EPOCH_TEST,
    "covers",
    {
        "disjoint": "ranks that shuffle differently share indices",
        "pads_from_head": "the order rebuilt from ranks that shuffle differently is no padded permutation",
        "strided": "each rank cuts its share from its own order",
    },
    under="torch",
)
class RankInSeed(PartsSampler):
    """Rank-divergent seeds: the generator is seeded with seed + epoch + rank, so every
    rank shuffles differently and ranks overlap (mlcommons/training #625, detectron2 #4438)."""

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed + self.epoch + self.rank)


@rejected(
    PER_EPOCH_TEST,
    "disjoint",
    {"equal_length": "it pads under drop_last, so every rank yields ceil(N/W), not floor(N/W)"},
    under="torch",
)
class DropLastIgnored(PartsSampler):
    """drop_last accepted but ignored: always pads, so ranks share indices under drop_last."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last=False)


@rejected(PER_EPOCH_TEST, "pads_from_head", {"strided": STRIDED_FROM_HEAD}, under="torch")
class PadsFromTail(PartsSampler):
    """Padding from the tail: `P + P[-pad:]` instead of the head."""

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last or self.total_size == len(indices):
            return super().pad(indices)
        padding = self.total_size - len(indices)
        return indices + (indices * math.ceil(padding / len(indices)))[-padding:]


@rejected(PER_EPOCH_TEST, "pads_from_head", {"strided": STRIDED_FROM_HEAD}, under="torch")
class RandomPadding(PartsSampler):
    """Random padding: pad items drawn at random, so which items are duplicated (and
    inflate eval metrics, pytorch #25162) is not the documented head."""

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last or self.total_size == len(indices):
            return super().pad(indices)
        padding = self.total_size - len(indices)
        picks = torch.randint(len(indices), (padding,), generator=self.generator()).tolist()
        return indices + [indices[k] for k in picks]


@rejected(
    PER_EPOCH_TEST,
    "pads_from_head",
    {
        **every(
            "len_matches_iter equal_length",
            "when N < W/2 the one head copy is too short, so the last ranks yield fewer items than len() says",
        ),
        "strided": STRIDED_FROM_HEAD,
        "unshuffled_in_order": UNEQUAL_SHARES,
    },
    sometimes={"equal_batches": "the batch-count test draws N < W/2 only now and then"},
    under="torch",
    profile="quick",  # the per-epoch test's five draws hold no N < W/2
)
class SingleHeadCopy(PartsSampler):
    """One head copy of padding: `P + P[:pad]` comes up short when pad > N, i.e. N < W/2
    (torch before pytorch #45324 / #49172, and maskrcnn-benchmark, seed 000). timm 1.0.31's
    OrderedDistributedSampler does not have it: it pads cyclically (`i % n`)."""

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last:
            return super().pad(indices)
        return indices + indices[: self.total_size - len(indices)]


@rejected(
    PER_EPOCH_TEST,
    "strided",
    {"unshuffled_in_order": "Q is rebuilt from the ranks strided, so contiguous shares scramble its head"},
    sometimes={"pads_from_head": "... and its padding, on the padded cases the draws reach"},
    under="torch",
)
class ContiguousBlocks(PartsSampler):
    """Contiguous blocks with head padding: rank r gets Q[r*n:(r+1)*n] (maskrcnn-benchmark,
    family B) instead of Q[r::W]."""

    def shard(self, indices: list[int]) -> list[int]:
        offset = self.num_samples * self.rank
        return indices[offset : offset + self.num_samples]


# ---- order ------------------------------------------------------------------------------


@rejected(PER_EPOCH_TEST, "unshuffled_in_order", under="torch")
class ShuffleIgnored(PartsSampler):
    """shuffle=False ignored: always shuffles (maskrcnn-benchmark sets self.shuffle = True)."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        super().__init__(dataset, num_replicas, rank, True, seed, drop_last)


@rejected(
    "test_same_order_without_set_epoch",
    "deterministic",
    {
        **every(
            "covers disjoint strided",
            "each rank's sampler draws the next permutation from the one global RNG, so ranks overlap",
        ),
        "pads_from_head": "the order rebuilt from ranks that overlap is no padded permutation",
    },
    under="torch",
)
class GlobalRNG(PartsSampler):
    """Shuffle drawn from the global RNG: `torch.randperm(N)` without a generator."""

    def order(self) -> list[int]:
        if self.shuffle:
            return torch.randperm(len(self.dataset)).tolist()
        return super().order()


@rejected("test_same_order_without_set_epoch", "deterministic", under="torch")
# In real groups too: its second pass is another order; the loader, compared with a twin driven as it is, is not charged.
@rejected("test_same_order_without_set_epoch", "deterministic", under="torch", whole_suite=True)
class ReshufflesEveryIter(PartsSampler):
    """Reshuffles on every iter(): one generator made in __init__ and advanced by each pass,
    so a second pass (e.g. an eval loop, or a restart) sees another order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._generator = torch.Generator().manual_seed(self.seed)

    def generator(self) -> torch.Generator:
        return self._generator


@rejected("test_set_epoch_reshuffles", "reshuffles_on_set_epoch", under="torch")
class EpochIgnored(PartsSampler):
    """set_epoch ignored: the generator is seeded with the seed only, so every epoch
    repeats the first one's order (pytorch #31771)."""

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)


@rejected("test_set_epoch_reshuffles", "reshuffles_on_set_epoch", under="torch")
class WrapperWithoutSetEpoch:
    """A wrapper with no set_epoch at all (Lightning #21454): the training loop's call
    fails or, guarded by `hasattr`, is skipped, and every epoch repeats the first."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        self.sampler = PartsSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)

    def __iter__(self) -> Iterator[int]:
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


@rejected("test_set_epoch_reshuffles", "reshuffles_on_set_epoch", under="torch")
class WrapperDropsSetEpoch(WrapperWithoutSetEpoch):
    """A wrapper whose set_epoch does not reach the sampler it wraps (Lightning #21454):
    it records the epoch, the wrapped DistributedSampler never sees it."""

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


@rejected("test_seed_changes_order", "seed_effective", under="torch")
class SeedIgnored(PartsSampler):
    """Seed ignored: the generator is seeded with the epoch only, as Lightning's
    UnrepeatedDistributedSampler and transformers #11389 did."""

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.epoch)


# ---- arguments and sizes ----------------------------------------------------------------


@rejected("test_invalid_arguments_refused", "validates_arguments", under="torch")
class NoRankValidation(PartsSampler):
    """No rank validation: rank >= W or rank < 0 builds a sampler that yields a wrong or
    empty shard instead of raising at construction."""

    def validate(self) -> None:
        pass


@rejected("test_edge_sizes", "edge_sizes", crashes=True, under="torch")
class CrashesOnEmptyDataset(PartsSampler):
    """Crash on an empty dataset: the padding divides by N without the `padding <= N`
    guard torch has (padding code that breaks on tiny datasets, pytorch #45324)."""

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last:
            return super().pad(indices)
        padding = self.total_size - len(indices)
        return indices + (indices * math.ceil(padding / len(indices)))[:padding]


# ---- cost ------------------------------------------------------------------------------------


@rejected(COST_TEST, "cost_follows_share", under="torch+scalable")
class HoldsWholePermutation(LazyDistributedSampler):
    """The lazy reference's order, but held whole on every rank, as torch's DistributedSampler
    holds its randperm: a Python list of the N indices of the epoch, of which the rank keeps
    its stride. Every index is the reference's; only its cost grows with N."""

    def __iter__(self) -> Iterator[int]:
        order = self.order()
        whole = list(range(self.size)) if order is None else order(np.arange(self.size)).tolist()
        whole += (whole * math.ceil(self.total_size / max(len(whole), 1)))[: self.total_size - len(whole)]
        return iter(whole[self.rank : self.total_size : self.num_replicas])


# ---- numeric edges (--scale) -------------------------------------------------------------------


@rejected(EDGE_TEST, "valid_indices", under="torch", options=AT_THE_EDGES)
class IndicesThroughInt32(LazyDistributedSampler):
    """The lazy reference, its indices kept in an int32 buffer, as index arrays are kept to
    halve their memory (NVIDIA/Megatron-LM #1672, fixed by #1673): every index past 2^31 - 1
    wraps negative. Right at every N the draws reach; wrong from N = 2^31 + 1."""

    def __iter__(self) -> Iterator[int]:
        for index in super().__iter__():
            yield (index + 2**31) % 2**32 - 2**31  # int32's wrap, without an array per index


@rejected(EDGE_TEST, "len_matches_iter", under="torch", options=AT_THE_EDGES)
class LenThroughFloat32(LazyDistributedSampler):
    """The lazy reference whose ``len()`` divides N in a float32 tensor: float32 holds every
    integer up to 2^24 exactly and rounds N = 2^24 + 1 down, so len() says one index fewer
    than the rank yields (1,024 for 1,025 on 16,384 ranks)."""

    def __len__(self) -> int:
        size = torch.tensor(self.size, dtype=torch.float32)
        if self.drop_last and self.size % self.num_replicas:
            return int(torch.floor(size / self.num_replicas))
        return int(torch.ceil(size / self.num_replicas))
