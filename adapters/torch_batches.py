"""The references of the index sampler's batch contracts, built on torch alone.

    sampler_conformance.adapters.torch_batches:per_rank       contract rank_batches   (the reference)
    sampler_conformance.adapters.torch_batches:WholeBatches   contract batch          (the reference)

``per_rank`` is what ``DataLoader(dataset, batch_size=B, sampler=DistributedSampler(dataset,
...))`` reads on rank r, as one batch sampler: torch's ``BatchSampler`` over torch's
``DistributedSampler``, both given ``drop_last``. The loader's training loop calls
``set_epoch`` on the DistributedSampler; here the batch sampler passes it on.

``WholeBatches`` is accelerate's layout (``BatchSamplerShard`` with its defaults) on torch
alone: one ``BatchSampler`` over the dataset's order, or over a permutation drawn from
``seed + epoch``, the same on every rank; rank r reads whole batches r, r+W, ..., and the
last round is completed from the first batches, so every rank reads as many.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DistributedSampler, Sampler


class PerRankBatches(BatchSampler):
    def __init__(self, sampler: DistributedSampler[int], batch_size: int, drop_last: bool) -> None:
        super().__init__(sampler, batch_size, drop_last)
        self.shares = sampler

    def set_epoch(self, epoch: int) -> None:
        self.shares.set_epoch(epoch)


def per_rank(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> PerRankBatches:
    shares: DistributedSampler[int] = DistributedSampler(
        dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    return PerRankBatches(shares, batch_size, drop_last)


class WholeBatches(Sampler[list[int]]):
    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        batch_size: int = 1,
    ) -> None:
        self.num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        self.rank = dist.get_rank() if rank is None else rank
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"Invalid rank {self.rank}, rank should be in the interval [0, {self.num_replicas - 1}]")
        self.size, self.shuffle, self.seed, self.drop_last, self.batch_size = (
            len(dataset),
            shuffle,
            seed,
            drop_last,
            batch_size,
        )
        self.epoch = 0

    def batches(self) -> list[list[int]]:
        """Every rank's batches of the epoch, in order: one BatchSampler over one order."""
        if self.shuffle:
            order = torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()
        else:
            order = list(range(self.size))
        return list(BatchSampler(order, self.batch_size, self.drop_last))

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.batches()
        rounds = math.ceil(len(batches) / self.num_replicas)
        completed = (batches * math.ceil(rounds * self.num_replicas / max(len(batches), 1)))[
            : rounds * self.num_replicas
        ]
        return iter(completed[self.rank :: self.num_replicas])

    def __len__(self) -> int:
        return math.ceil(len(self.batches()) / self.num_replicas)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
