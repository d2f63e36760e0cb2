"""Known-bad samplers: each is :class:`PartsSampler` with one bug a real project shipped.

The docstring's first line names the bug class; ``Rejected by`` names the property that
must catch it. ``selftests/catalogue.py`` maps each sampler to that property's test.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import torch

from .parts import PartsSampler

# ---- lengths ----------------------------------------------------------------------------


class LenIgnoresDropLast(PartsSampler):
    """`__len__` disagrees with iteration: it reports ceil(N/W) even under drop_last.

    Rejected by: len() matches iteration. A DataLoader sizes its progress bar and LR
    schedule from len() while the loop runs one step fewer.
    """

    def __len__(self) -> int:
        return math.ceil(len(self.dataset) / self.num_replicas)


class FloorNotCeil(PartsSampler):
    """Floor instead of ceil: every rank gets N // W items, the remainder silently lost.

    Rejected by: equal per-rank lengths (ceil(N/W) without drop_last).
    """

    def samples_per_rank(self, size: int) -> int:
        return size // self.num_replicas


class UnevenContiguousSplit(PartsSampler):
    """Uneven per-rank lengths: contiguous shards without padding, the first N % W ranks
    one item longer (detectron2 InferenceSampler used for training; pytorch #22584).

    Rejected by: equal per-rank lengths.
    """

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


class UnpaddedStrided(PartsSampler):
    """Uneven batch counts: strided shares without padding, so ranks yield ceil or floor
    of N/W items and one rank runs an extra step: the DDP hang of pytorch #22584, #141069.

    Rejected by: equal batch counts (and equal per-rank lengths). `__len__` is honest, so
    BatchSampler's len() differs across ranks too.
    """

    def pad(self, indices: list[int]) -> list[int]:
        return indices

    def shard(self, indices: list[int]) -> list[int]:
        return indices[self.rank :: self.num_replicas]

    def __len__(self) -> int:
        return len(range(self.rank, len(self.dataset), self.num_replicas))


# ---- indices ----------------------------------------------------------------------------


class YieldsTensors(PartsSampler):
    """Yields 0-d tensors: `iter(torch.randperm(N))` without `.tolist()`.

    Rejected by: valid indices (items must be Python ints).
    """

    def __iter__(self) -> Iterator[Any]:
        return iter(torch.tensor(self.shard(self.pad(self.order())), dtype=torch.int64))


class YieldsFloats(PartsSampler):
    """Yields floats: indices computed with true division, e.g. `i * N / N`.

    Rejected by: valid indices.
    """

    def __iter__(self) -> Iterator[Any]:
        return iter([float(i) for i in self.shard(self.pad(self.order()))])


class PadsPastTheEnd(PartsSampler):
    """Out-of-range index: pads with `N + k` (a 'dummy sample' id) instead of real items.

    Rejected by: valid indices (every index in [0, N)).
    """

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last:
            return super().pad(indices)
        return indices + list(range(len(indices), self.total_size))


class NeverStops(PartsSampler):
    """Never stops: an infinite training stream (detectron2 TrainingSampler, family D)
    certified as a finite epoch sampler.

    Rejected by: valid indices (read with a bound, reported as never stopping).
    """

    def __iter__(self) -> Iterator[int]:
        share = self.shard(self.pad(self.order()))
        return itertools.cycle(share) if share else iter(())


# ---- which ranks get which indices ------------------------------------------------------


class RankInSeed(PartsSampler):
    """Rank-divergent seeds: the generator is seeded with seed + epoch + rank, so every
    rank shuffles differently and ranks overlap (mlcommons/training #625, detectron2 #4438).

    Rejected by: union coverage.
    """

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed + self.epoch + self.rank)


class DropLastIgnored(PartsSampler):
    """drop_last accepted but ignored: always pads, so ranks share indices under drop_last.

    Rejected by: union coverage (disjoint with drop_last).
    """

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


class PadsFromTail(PartsSampler):
    """Padding from the tail: `P + P[-pad:]` instead of the head.

    Rejected by: padding from the head.
    """

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last or self.total_size == len(indices):
            return super().pad(indices)
        padding = self.total_size - len(indices)
        return indices + (indices * math.ceil(padding / len(indices)))[-padding:]


class RandomPadding(PartsSampler):
    """Random padding: pad items drawn at random, so which items are duplicated (and
    inflate eval metrics, pytorch #25162) is not the documented head.

    Rejected by: padding from the head.
    """

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last or self.total_size == len(indices):
            return super().pad(indices)
        padding = self.total_size - len(indices)
        picks = torch.randint(len(indices), (padding,), generator=self.generator()).tolist()
        return indices + [indices[k] for k in picks]


class SingleHeadCopy(PartsSampler):
    """One head copy of padding: `P + P[:pad]` comes up short when pad > N, i.e. N < W/2
    (torch before pytorch #45324 / #49172, and maskrcnn-benchmark, seed 000). timm 1.0.31's
    OrderedDistributedSampler does not have it: it pads cyclically (`i % n`).

    Rejected by: padding from the head (ranks end up with unequal lengths).
    """

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last:
            return super().pad(indices)
        return indices + indices[: self.total_size - len(indices)]


class ContiguousBlocks(PartsSampler):
    """Contiguous blocks with head padding: rank r gets Q[r*n:(r+1)*n] (maskrcnn-benchmark,
    family B) instead of Q[r::W].

    Rejected by: strided assignment.
    """

    def shard(self, indices: list[int]) -> list[int]:
        offset = self.num_samples * self.rank
        return indices[offset : offset + self.num_samples]


# ---- order ------------------------------------------------------------------------------


class ShuffleIgnored(PartsSampler):
    """shuffle=False ignored: always shuffles (maskrcnn-benchmark sets self.shuffle = True).

    Rejected by: shuffle=False keeps dataset order.
    """

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


class GlobalRNG(PartsSampler):
    """Shuffle drawn from the global RNG: `torch.randperm(N)` without a generator.

    Rejected by: identical order without set_epoch (depends on, and advances, torch's
    global RNG; in separate processes the ranks would also disagree).
    """

    def order(self) -> list[int]:
        if self.shuffle:
            return torch.randperm(len(self.dataset)).tolist()
        return super().order()


class ReshufflesEveryIter(PartsSampler):
    """Reshuffles on every iter(): one generator made in __init__ and advanced by each pass,
    so a second pass (e.g. an eval loop, or a restart) sees another order.

    Rejected by: identical order without set_epoch.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._generator = torch.Generator().manual_seed(self.seed)

    def generator(self) -> torch.Generator:
        return self._generator


class EpochIgnored(PartsSampler):
    """set_epoch ignored: the generator is seeded with the seed only, so every epoch
    repeats the first one's order (pytorch #31771).

    Rejected by: reshuffle with set_epoch.
    """

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)


class WrapperWithoutSetEpoch:
    """A wrapper with no set_epoch at all (Lightning #21454): the training loop's call
    fails or, guarded by `hasattr`, is skipped, and every epoch repeats the first.

    Rejected by: reshuffle with set_epoch (reported as a missing method).
    """

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


class WrapperDropsSetEpoch(WrapperWithoutSetEpoch):
    """A wrapper whose set_epoch does not reach the sampler it wraps (Lightning #21454):
    it records the epoch, the wrapped DistributedSampler never sees it.

    Rejected by: reshuffle with set_epoch.
    """

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class SeedIgnored(PartsSampler):
    """Seed ignored: the generator is seeded with the epoch only, as Lightning's
    UnrepeatedDistributedSampler and transformers #11389 did.

    Rejected by: seed changes the order.
    """

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.epoch)


# ---- arguments and sizes ----------------------------------------------------------------


class NoRankValidation(PartsSampler):
    """No rank validation: rank >= W or rank < 0 builds a sampler that yields a wrong or
    empty shard instead of raising at construction.

    Rejected by: invalid arguments refused.
    """

    def validate(self) -> None:
        pass


class CrashesOnEmptyDataset(PartsSampler):
    """Crash on an empty dataset: the padding divides by N without the `padding <= N`
    guard torch has (padding code that breaks on tiny datasets, pytorch #45324).

    Rejected by: edge sizes work (N = 0).
    """

    def pad(self, indices: list[int]) -> list[int]:
        if self.drop_last:
            return super().pad(indices)
        padding = self.total_size - len(indices)
        return indices + (indices * math.ceil(padding / len(indices)))[:padding]
