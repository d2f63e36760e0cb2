"""Good samplers that must be certified, and the two seed samplers the project started from."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from random import Random
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler, Sampler

# Must pass every property: the contract is written from it.
TorchDistributedSampler = DistributedSampler


class SlowDistributedSampler(DistributedSampler):
    """torch's sampler, right, but 40 µs an index (a sampler that reads a table per item): a
    whole pass of 10,000 items on one rank takes 0.4 s, and its draws are planned smaller."""

    SECONDS_AN_INDEX = 40e-6

    def __iter__(self) -> Iterator[int]:
        for index in super().__iter__():
            until = time.perf_counter() + self.SECONDS_AN_INDEX
            while time.perf_counter() < until:  # sleep() sleeps 50 µs or more
                pass
            yield index


class NumpyDistributedSampler(Sampler[int]):
    """An independent numpy implementation of the same contract; must pass every property.

    Its orders differ from torch's (numpy's generator, not torch.randperm), which the
    contract allows: only the structure of the orders is specified.
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
        if num_replicas is None or rank is None:
            raise ValueError("NumpyDistributedSampler needs explicit num_replicas and rank")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank} for num_replicas={num_replicas}")
        self.size, self.world, self.rank = len(dataset), num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        self.per_rank = self.size // self.world if drop_last else -(-self.size // self.world)

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(self.size)
        else:
            order = np.arange(self.size)
        padded = np.resize(order, self.per_rank * self.world)  # cyclic head padding, or a cut
        return iter(padded[self.rank :: self.world].tolist())

    def __len__(self) -> int:
        return self.per_rank

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class MaskRCNNDistributedSampler(Sampler[int]):
    """Seed 000: maskrcnn-benchmark's samplers/distributed.py, ported from
    torch.distributed.deprecated to torch.distributed, otherwise as shipped.

    Contract family B: contiguous blocks, one head copy of padding, generator seeded with
    the epoch only (no ``seed``), no ``drop_last``, and ``self.shuffle = True`` whatever
    the caller passed. ``assert len(indices) == self.total_size`` crashes when N < W/2,
    the padding bug of pytorch #45324 / #49172. Must be rejected by: strided assignment,
    shuffle=False order, edge sizes (the crash); seed/drop_last properties are skipped.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True):
        if num_replicas is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size()
        if rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = dist.get_rank()
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.num_samples = int(math.ceil(len(self.dataset) * 1.0 / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = True  # sic: the shipped code ignores its shuffle argument

    def __iter__(self):
        if self.shuffle:
            # deterministically shuffle based on epoch
            g = torch.Generator()
            g.manual_seed(self.epoch)
            indices = torch.randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = torch.arange(len(self.dataset)).tolist()

        # add extra samples to make it evenly divisible
        indices += indices[: (self.total_size - len(indices))]
        assert len(indices) == self.total_size

        # subsample
        offset = self.num_samples * self.rank
        indices = indices[offset : offset + self.num_samples]
        assert len(indices) == self.num_samples

        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


class DataPartitionerSampler(Sampler[int]):
    """Seed 003: the PyTorch distributed tutorial's DataPartitioner as a sampler.

    One ``random.Random(seed)`` shuffle (the tutorial's seed 1234), then contiguous
    chunks of ``int(1.0 / W * N)`` per rank, the remainder dropped, no ``set_epoch``, no
    ``shuffle``/``drop_last`` parameters. Family C without the remainder: the ranks do
    not cover the dataset and never reshuffle (pytorch #31771).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, seed=1234):
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        # DataPartitioner(data, sizes=[1.0 / size] * size, seed): the tutorial's code.
        sizes = [1.0 / num_replicas for _ in range(num_replicas)]
        rng = Random()
        rng.seed(seed)
        data_len = len(dataset)
        indexes = [x for x in range(0, data_len)]
        rng.shuffle(indexes)
        partitions = []
        for frac in sizes:
            part_len = int(frac * data_len)
            partitions.append(indexes[0:part_len])
            indexes = indexes[part_len:]
        # partition.use(rank)
        self.indices = partitions[rank]

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)
