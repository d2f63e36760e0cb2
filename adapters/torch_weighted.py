"""The weighted contract's reference: a distributed weighted sampler built on torch alone.

    sampler_conformance.adapters.torch_weighted:make   contract weighted   (the reference)

Each epoch it draws ``num_samples x num_replicas`` indices with replacement, item ``i`` with
probability ``w_i / sum(w)`` (``torch.multinomial``), from a generator seeded with
``seed + epoch``, the same on every rank; rank ``r`` keeps draws ``r, r + W, ...``. So the
ranks' draws together are one weighted draw, every rank's stream is its own, and the stream
is a function of the seed and the epoch alone, in any process.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler


class DistributedWeightedSampler(Sampler[int]):
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
        return torch.multinomial(self.weights, total, replacement=True, generator=generator)

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws()[self.rank :: self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


make = DistributedWeightedSampler
