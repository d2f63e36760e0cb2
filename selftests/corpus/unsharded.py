"""Samplers and batch samplers with no rank of their own, certified sharded by a library's
wrapper (``--shard-with``): each is built as ``Inner(dataset, shuffle=, seed=, drop_last=,
batch_size=)``, of these the ones it takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import Sampler


class SeededOrder(Sampler[int]):
    """An index sampler with no rank: the dataset's order, or a permutation drawn from
    seed + epoch, the same in every process."""

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0):
        self.size, self.shuffle, self.seed, self.epoch = len(dataset), shuffle, seed, 0

    def order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.size))
        return torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()

    def __iter__(self) -> Iterator[int]:
        return iter(self.order())

    def __len__(self) -> int:
        return self.size

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class SeededBatches(Sampler[list[int]]):
    """SeededOrder's order cut into batches of batch_size (the last one short unless
    drop_last): a BatchSampler over a seeded sampler."""

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0, drop_last: bool = False, batch_size: int = 1):
        self.orders = SeededOrder(dataset, shuffle, seed)
        self.drop_last, self.batch_size = drop_last, batch_size

    def sizes(self) -> list[int]:
        """The batches' sizes, in order."""
        full, rest = divmod(len(self.orders), self.batch_size)
        return [self.batch_size] * full + ([rest] if rest and not self.drop_last else [])

    def __iter__(self) -> Iterator[list[int]]:
        order, start = self.orders.order(), 0
        for size in self.sizes():
            yield order[start : start + size]
            start += size

    def __len__(self) -> int:
        return len(self.sizes())

    def set_epoch(self, epoch: int) -> None:
        self.orders.set_epoch(epoch)


class ShortBatchMidEpoch(SeededBatches):
    """Its second batch is one item short, the items it leaves moving to the last batch or a
    new one, as sentence-transformers' ``NoDuplicatesBatchSampler`` yields a short batch where
    a duplicate would enter it. Sharded by accelerate 1.15's ``BatchSamplerShard``, whose
    rounds are yielded only when their last batch is full, a round that ends with it is lost."""

    def sizes(self) -> list[int]:
        sizes = super().sizes()
        if len(sizes) < 3 or self.batch_size < 2:
            return sizes
        sizes[1] -= 1
        if self.drop_last or sizes[-1] == self.batch_size:
            return [*sizes, 1] if not self.drop_last else sizes
        sizes[-1] += 1
        return sizes


class GlobalRNGOrder(SeededOrder):
    """Shuffles from torch's global generator, as a custom sampler written for one process
    does. Lightning's DistributedSamplerWrapper leaves the randomness to the inner sampler
    ("the shuffle and seed arguments on this wrapper won't have any effect"), so every rank
    deals positions of its own permutation: the ranks overlap and miss items."""

    def order(self) -> list[int]:
        return torch.randperm(self.size).tolist() if self.shuffle else list(range(self.size))
