"""The weighted contracts' references: distributed weighted samplers built on torch alone.

    sampler_conformance.adapters.torch_weighted:make                      contract weighted
    sampler_conformance.adapters.torch_weighted:make_partitioned          contract weighted_partition
    sampler_conformance.adapters.torch_weighted:make_without_replacement  contract weighted_without_replacement

Each is its contract's reference. Each epoch ``make`` draws ``num_samples x num_replicas``
indices with replacement, item ``i`` with probability ``w_i / sum(w)`` (``torch.multinomial``;
past its 2^24 items, ``draw_past_the_cap``),
from a generator seeded with ``seed + epoch``, the same on every rank; rank ``r`` keeps draws
``r, r + W, ...``. So the ranks' draws together are one weighted draw, every rank's stream is
its own, and the stream is a function of the seed and the epoch alone, in any process.
``make_without_replacement`` draws them without replacement: one after another, each by the
weights of the items left.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast

import torch
from torch.utils.data import Dataset, DistributedSampler, Sampler

# torch.multinomial refuses more categories than this ("number of categories cannot exceed
# 2^24", pytorch/pytorch #2576): past it, the references draw by the same law another way.
MULTINOMIAL_CATEGORIES = 2**24


def draw_past_the_cap(weights: torch.Tensor, total: int, replacement: bool, generator: torch.Generator) -> torch.Tensor:
    """``total`` draws by ``weights`` from any number of items: with replacement by the
    inverse of the cumulative weights at uniform points; without, the ``total`` smallest of
    Exp(1) / w_i, which orders the items as successive sampling does (an item of weight 0 last)."""
    if replacement:
        cumulative = torch.cumsum(weights, 0)
        points = torch.rand(total, generator=generator, dtype=torch.double) * cumulative[-1]
        return torch.searchsorted(cumulative, points, right=True).clamp_(max=weights.numel() - 1)
    keys = torch.empty(weights.numel(), dtype=torch.double).exponential_(generator=generator) / weights
    return torch.topk(keys, total, largest=False).indices


class DistributedWeightedSampler(Sampler[int]):
    replacement = True

    def __init__(self, weights: Sequence[float], num_replicas: int, rank: int, num_samples: int, seed: int = 0) -> None:
        self.weights = torch.as_tensor(weights, dtype=torch.double)
        self.num_replicas = num_replicas
        self.rank = rank
        self.num_samples = num_samples
        self.seed = seed
        self.epoch = 0

    def draws(self) -> torch.Tensor:
        """This epoch's draws of all ranks together."""
        total = self.num_samples * self.num_replicas
        if total == 0:
            return torch.empty(0, dtype=torch.int64)
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        if self.weights.numel() <= MULTINOMIAL_CATEGORIES:
            return torch.multinomial(self.weights, total, replacement=self.replacement, generator=generator)
        return draw_past_the_cap(self.weights, total, self.replacement, generator)

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws()[self.rank :: self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


make = DistributedWeightedSampler


class DistinctWeightedSampler(DistributedWeightedSampler):
    replacement = False


make_without_replacement = DistinctWeightedSampler


class PartitionedWeightedSampler(DistributedWeightedSampler):
    """The ``weighted_partition`` reference: rank ``r`` draws ``num_samples`` indices over its
    ``DistributedSampler`` partition (shuffled by ``seed`` and the epoch), by the partition's
    weights, from a generator seeded with the seed, the epoch and the rank. A partition of
    weight 0 only draws by the weights of the whole dataset, so that every rank draws as
    many and no item of weight 0 comes back."""

    def partition(self) -> list[int]:
        return partition_of(self.weights.numel(), self.num_replicas, self.rank, self.seed, self.epoch)

    def __iter__(self) -> Iterator[int]:
        part = self.partition()
        weights = self.weights[part]
        if float(weights.sum()) == 0:
            part, weights = list(range(self.weights.numel())), self.weights
        generator = torch.Generator().manual_seed((self.seed + self.epoch) * self.num_replicas + self.rank)
        drawn = torch.multinomial(weights, self.num_samples, replacement=True, generator=generator)
        return iter(part[i] for i in drawn.tolist())


def partition_of(dataset_size: int, num_replicas: int, rank: int, seed: int, epoch: int) -> list[int]:
    """Rank ``rank``'s indices from torch's ``DistributedSampler`` (shuffled, padded) at ``epoch``."""
    indices = cast("Dataset[int]", range(dataset_size))  # DistributedSampler needs only its len()
    sampler: DistributedSampler[int] = DistributedSampler(
        indices, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed
    )
    sampler.set_epoch(epoch)
    return list(sampler)


make_partitioned = PartitionedWeightedSampler
