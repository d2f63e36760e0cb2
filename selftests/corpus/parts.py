"""DistributedSampler rebuilt from small overridable steps.

The known-bad samplers subclass it and override exactly one step, so each differs from
a conforming sampler by one bug. The selftests certify this class itself too: a
deviation in a subclass is then the only thing that can fail it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import Sampler


class PartsSampler(Sampler[int]):
    """Same contract as torch's DistributedSampler (DESIGN.md section 3)."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        self.dataset = dataset
        self.num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        self.rank = dist.get_rank() if rank is None else rank
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0
        self.validate()
        self.num_samples = self.samples_per_rank(len(dataset))
        self.total_size = self.num_samples * self.num_replicas

    def validate(self) -> None:
        if self.rank >= self.num_replicas or self.rank < 0:
            raise ValueError(f"Invalid rank {self.rank}, rank should be in the interval [0, {self.num_replicas - 1}]")

    def samples_per_rank(self, size: int) -> int:
        if self.drop_last and size % self.num_replicas != 0:
            return math.ceil((size - self.num_replicas) / self.num_replicas)
        return math.ceil(size / self.num_replicas)

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed + self.epoch)

    def order(self) -> list[int]:
        """P: the permutation of range(N) every rank derives its share from."""
        size = len(self.dataset)
        if self.shuffle:
            return torch.randperm(size, generator=self.generator()).tolist()
        return list(range(size))

    def pad(self, indices: list[int]) -> list[int]:
        """Q: P padded to total_size by repeating its head, or cut to it with drop_last."""
        if self.drop_last:
            return indices[: self.total_size]
        padding = self.total_size - len(indices)
        if padding <= len(indices):
            return indices + indices[:padding]
        return indices + (indices * math.ceil(padding / len(indices)))[:padding]

    def shard(self, indices: list[int]) -> list[int]:
        return indices[self.rank : self.total_size : self.num_replicas]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.shard(self.pad(self.order())))

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
